"""Grouped reductions on an OpenCL device (PoCL here): the sum of 4M floats and the row sums of 8 x 512K, with NOOPT, the default GPU
heuristic and BEAM=2, each checked against numpy. Run with DEBUG=2 to see each kernel's time; the figures in bench/RESULTS.md are the
best of the 6 runs per mode. Usage: DEBUG=2 python bench/cl_reduce.py"""
import numpy as np
from tinygrad import Tensor
from tinygrad.helpers import Context

flat = np.random.default_rng(0).standard_normal((1 << 22,)).astype(np.float32)
rows = np.random.default_rng(1).standard_normal((8, 1 << 19)).astype(np.float32)
for mode in ("NOOPT", "default", "BEAM=2"):
  print("MODE", mode, flush=True)
  with Context(NOOPT=int(mode == "NOOPT"), BEAM=2 if mode == "BEAM=2" else 0):
    t_flat, t_rows = Tensor(flat, device="CL").realize(), Tensor(rows, device="CL").realize()
    for _ in range(6): total = t_flat.sum().realize()
    for _ in range(6): row_sums = t_rows.sum(1).realize()
    np.testing.assert_allclose(total.numpy(), flat.astype(np.float64).sum(), rtol=0, atol=1e-4 * np.abs(flat).sum())
    np.testing.assert_allclose(row_sums.numpy(), rows.sum(1), rtol=1e-3, atol=1e-2)
