"""Non-reduce ops and matmuls at a power-of-two shape and at odd shapes next to it, beside torch when importable: a cliff is an odd shape
far more than proportionally slower than its power-of-two neighbour (an axis no vector width divides: peeled gates, scalar loops, a
tile that fell back to lanes that share nothing). Each result is checked against numpy; figures are the median (and min) of `runs`
realizes (device synchronized) after a warm-up. `odd/pow2` is tg's time per unit of work (elements, or multiply-adds) against the
family's first shape. One JSON line per figure, then a table.
Usage: python bench/odd_shapes.py [runs, default 9] [name filter]"""
import json, statistics, sys, time
import numpy as np
from tinygrad import Tensor, Device
try: import torch
except ImportError: torch = None

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 9
FILTER = sys.argv[2] if len(sys.argv) > 2 else ""
rng = np.random.default_rng(0)
def f32(*shape): return rng.standard_normal(shape, dtype=np.float32)
def ids(n, hi): return rng.integers(0, hi, n).astype(np.int32)
def sq(n): return (n, n)

# family: (inputs for a shape, tg function, torch function, numpy function, work of a shape, shapes: power of two first)
M = 4096
FAMILIES = {
  "add": (lambda s: (f32(*s), f32(*s)), lambda x, y: x + y, lambda x, y: x + y, lambda x, y: x + y, np.prod,
          [(M, M), (M, M - 1), (M - 1, M + 1), (1 << 24,), ((1 << 24) - 1,)]),
  "relu(x*2+1)": (lambda s: (f32(*s),), lambda x: (x * 2 + 1).relu(), lambda x: (x * 2 + 1).relu(), lambda x: np.maximum(x * 2 + 1, 0),
                  np.prod, [(M, M), (M, M - 1), (M - 1, M + 1), ((1 << 24) - 1,)]),
  "x + row[None]": (lambda s: (f32(*s), f32(s[1])), lambda x, b: x + b, lambda x, b: x + b, lambda x, b: x + b, np.prod,
                    [(M, M), (M, M - 1), (M - 1, M + 1)]),
  "x + col[:, None]": (lambda s: (f32(*s), f32(s[0], 1)), lambda x, c: x + c, lambda x, c: x + c, lambda x, c: x + c, np.prod,
                       [(M, M), (M, M - 1), (M - 1, M + 1)]),
  "where(x > 0, x, y)": (lambda s: (f32(*s), f32(*s)), lambda x, y: (x > 0).where(x, y), lambda x, y: torch.where(x > 0, x, y),
                         lambda x, y: np.where(x > 0, x, y), np.prod, [(M, M), (M, M - 1), (M - 1, M + 1)]),
  "cast f32->f16": (lambda s: (f32(*s),), lambda x: x.half(), lambda x: x.half(), lambda x: x.astype(np.float16), np.prod,
                    [(M, M), (M, M - 1), (M - 1, M + 1)]),
  "cast f32->i32": (lambda s: (f32(*s) * 100,), lambda x: x.int(), lambda x: x.int(), lambda x: x.astype(np.int32), np.prod,
                    [(M, M), (M, M - 1), (M - 1, M + 1)]),
  "x.T.contiguous()": (lambda s: (f32(*s),), lambda x: x.T.contiguous(), lambda x: x.T.contiguous(), lambda x: x.T, np.prod,
                       [(M, M), (M, M - 1), (M - 1, M + 1), (1000, 1000)]),
  "permute 0,2,1,3": (lambda s: (f32(*s),), lambda x: x.permute(0, 2, 1, 3).contiguous(), lambda x: x.permute(0, 2, 1, 3).contiguous(),
                      lambda x: x.transpose(0, 2, 1, 3), np.prod, [(8, 256, 8, 64), (8, 255, 8, 63), (8, 257, 7, 65)]),
  # a slice of width n of one (M, M) tensor (its functions come from the shape: slice_fns)
  "x[:, :n].contiguous()": (lambda s: (f32(M, M),), None, None, None, np.prod, [(M, 2048), (M, 2047), (M, 2049), (M, M - 1)]),
  "x[:, 1:].contiguous()": (lambda s: (f32(s[0], s[1] + 1),), lambda x: x[:, 1:].contiguous(), lambda x: x[:, 1:].contiguous(),
                            lambda x: x[:, 1:], np.prod, [(M, M), (M, M - 1), (M - 1, M + 1)]),
  "cat axis 1": (lambda s: (f32(M, s[0]), f32(M, s[1])), lambda x, y: x.cat(y, dim=1), lambda x, y: torch.cat([x, y], 1),
                 lambda x, y: np.concatenate([x, y], 1), lambda s: M * (s[0] + s[1]), [(2048, 2048), (2047, 2048), (2047, 2049), (2048, 2047)]),
  "cat axis 0": (lambda s: (f32(s[0], s[1]), f32(s[0], s[1])), lambda x, y: x.cat(y, dim=0), lambda x, y: torch.cat([x, y], 0),
                 lambda x, y: np.concatenate([x, y], 0), lambda s: 2 * s[0] * s[1], [(2048, M), (2048, M - 1), (2047, M + 1)]),
  "pad 1 each side": (lambda s: (f32(*s),), lambda x: x.pad(((1, 1), (1, 1))).contiguous(), lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1)),
                      lambda x: np.pad(x, 1), np.prod, [(M - 2, M - 2), (M - 1, M - 1), (M - 3, M - 1)]),
  "embedding w[ids]": (lambda s: (f32(32000, s[1]), ids(s[0], 32000)), lambda w, i: w[i], lambda w, i: w[i.long()], lambda w, i: w[i],
                       np.prod, [(2048, 512), (2048, 511), (2047, 513), (2048, 500)]),
  "gather 1-D x[ids]": (lambda s: (f32(1 << 20), ids(s[0], 1 << 20)), lambda x, i: x[i], lambda x, i: x[i.long()], lambda x, i: x[i],
                        np.prod, [(1 << 22,), ((1 << 22) - 1,)]),
  "matmul": (lambda s: (f32(s[0], s[1]), f32(s[1], s[2])), lambda a, b: a @ b, lambda a, b: a @ b, lambda a, b: a @ b, np.prod,
             [(1024, 1024, 1024), (1023, 1023, 1023), (1025, 1025, 1025), (1000, 1000, 1000), (1024, 1024, 1000), (1000, 1024, 1024),
              (1024, 1000, 1024)]),
  "conv2d 3x3 pad 1": (lambda s: (f32(8, s[0], s[1], s[1]), f32(s[0], s[0], 3, 3)), lambda x, w: x.conv2d(w, padding=1),
                       lambda x, w: torch.nn.functional.conv2d(x, w, padding=1), None, lambda s: 8 * s[0] * s[0] * 9 * s[1] * s[1],
                       [(64, 56), (64, 55), (64, 57), (63, 56)]),
}
def slice_fns(s):
  n = s[1]
  return lambda x: x[:, :n].contiguous(), lambda x: x[:, :n].contiguous(), lambda x: x[:, :n]

def timed(fn) -> tuple[float, float]:
  fn()
  ts = []
  for _ in range(RUNS):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return statistics.median(ts) * 1e3, min(ts) * 1e3

if __name__ == "__main__":
  if torch is not None and hasattr(Device["CPU"], "pool_cores"): torch.set_num_threads(len(Device["CPU"].pool_cores))
  rows = []
  for fam, (make, tg_fn, torch_fn, np_fn, work, shapes) in FAMILIES.items():
    if FILTER not in fam: continue
    base = None
    for s in shapes:
      if tg_fn is None: tg_fn_s, torch_fn_s, np_fn_s = slice_fns(s)
      else: tg_fn_s, torch_fn_s, np_fn_s = tg_fn, torch_fn, np_fn
      arrays = make(s)
      tgs = [Tensor(a).realize() for a in arrays]
      got = tg_fn_s(*tgs).numpy()
      if np_fn_s is not None: want = np_fn_s(*arrays)
      elif torch is not None: want = torch_fn_s(*[torch.from_numpy(a) for a in arrays]).numpy()
      else: want = got
      if got.dtype.kind == "f": np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * max(1.0, float(np.abs(want).max())), err_msg=f"{fam} {s}")
      else: np.testing.assert_array_equal(got, want, err_msg=f"{fam} {s}")
      tg_med, tg_min = timed(lambda: (tg_fn_s(*tgs).realize(), Device[Device.DEFAULT].synchronize()))
      pt_med = None
      if torch is not None:
        pts = [torch.from_numpy(a) for a in arrays]
        pt_med = timed(lambda: torch_fn_s(*pts))[0]
      per = tg_med / float(work(s))
      base = base or per
      row = {"op": fam, "shape": list(s), "tg_ms": round(tg_med, 3), "tg_min_ms": round(tg_min, 3),
             "torch_ms": None if pt_med is None else round(pt_med, 3), "odd_over_pow2": round(per / base, 2)}
      rows.append(row)
      print(json.dumps(row), flush=True)
  print("| op | shape | tg ms (median) | torch ms | tg odd/pow2 per unit of work |\n|---|---|---:|---:|---:|")
  for r in rows:
    pt = "-" if r["torch_ms"] is None else f"{r['torch_ms']:.3f}"
    print(f"| {r['op']} | {'x'.join(map(str, r['shape']))} | {r['tg_ms']:.3f} | {pt} | {r['odd_over_pow2']:.2f} |")
