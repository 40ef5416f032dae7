"""Concatenations and pads, whose kernels read each source under a gate, beside torch: each result checked against numpy, then the best
of `runs` realizes. Run it alternately with two trees' interpreters (e.g. /work/main/.venv/bin/python and .venv/bin/python) to A/B them:
the ratio to torch in one process is what compares on a busy machine. Usage: python bench/cat_pad.py [runs, default 5] [rounds, default 1]"""
import sys
import numpy as np
import torch
import tinygrad
from tinygrad import Tensor, Device
from sampling import best

runs, rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 1
if hasattr(Device["CPU"], "pool_cores"): torch.set_num_threads(len(Device["CPU"].pool_cores))
rng = np.random.default_rng(0)
a, b = rng.standard_normal((4096, 2048), dtype=np.float32), rng.standard_normal((4096, 2048), dtype=np.float32)
c = rng.standard_normal((4096, 2047), dtype=np.float32)
CASES = {  # name: (inputs, tg function, torch function, numpy function)
  "cat axis 1 2x(4096x2048)": ((a, b), lambda x, y: x.cat(y, dim=1), lambda x, y: torch.cat([x, y], 1), lambda x, y: np.concatenate([x, y], 1)),
  "cat axis 0 2x(4096x2048)": ((a, b), lambda x, y: x.cat(y, dim=0), lambda x, y: torch.cat([x, y], 0), lambda x, y: np.concatenate([x, y], 0)),
  "cat axis 1 4096x(2048+2047)": ((a, c), lambda x, y: x.cat(y, dim=1), lambda x, y: torch.cat([x, y], 1), lambda x, y: np.concatenate([x, y], 1)),
  # contiguous: a pad of a realized buffer is otherwise a view, realized by nothing
  "pad 4096x2048 by 8 each side": ((a,), lambda x: x.pad(((8, 8), (8, 8))).contiguous(), lambda x: torch.nn.functional.pad(x, (8, 8, 8, 8)),
                                   lambda x: np.pad(x, 8)),
  "pad 4096x2048 by (3, 5) columns": ((a,), lambda x: x.pad(((0, 0), (3, 5))).contiguous(), lambda x: torch.nn.functional.pad(x, (3, 5)),
                                      lambda x: np.pad(x, ((0, 0), (3, 5)))),
}
tree = tinygrad.__file__.split("/packages/")[0]
for _ in range(rounds):
  for name, (arrays, tg_fn, torch_fn, np_fn) in CASES.items():
    tgs, pts = [Tensor(x).realize() for x in arrays], [torch.from_numpy(x) for x in arrays]
    np.testing.assert_array_equal(tg_fn(*tgs).numpy(), np_fn(*arrays), err_msg=name)
    tg = best(lambda: (tg_fn(*tgs).realize(), Device["CPU"].synchronize()), runs)
    pt = best(lambda: torch_fn(*pts), runs)
    print(f"{tree} | {name} | tg {tg*1e3:.2f} ms | torch {pt*1e3:.2f} ms | torch/tg {pt/tg:.2f}", flush=True)
