"""Matmul on an NVIDIA GPU: tg on DEV (CUDA: CUDA C through NVRTC, CUDA:PTX: our PTX) beside torch.cuda, fp32, TF32 off in torch so both
do IEEE fp32 math. Prints one JSON line per figure: GFLOP/s (best of RUNS after a warm-up) and tg's largest relative difference from
torch on the same inputs. Usage: python bench/gpu_matmul.py [N=4096] [DEV=CUDA] [RUNS=5]"""
import json, sys, time
import numpy as np
from tinygrad import Tensor, Device

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
DEV = sys.argv[2] if len(sys.argv) > 2 else "CUDA"
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 5

def best(fn) -> float:
  fn()
  ts = []
  for _ in range(RUNS):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)

a_np, b_np = (np.random.default_rng(i).standard_normal((N, N), dtype=np.float32) for i in (0, 1))
a, b = Tensor(a_np, device=DEV).realize(), Tensor(b_np, device=DEV).realize()
out = {}
def tg_matmul(): out["tg"] = (a @ b).realize(); Device[DEV].synchronize()
res = {"bench": f"matmul {N}x{N} fp32", "device": DEV, "tg GFLOP/s": round(2 * N**3 / best(tg_matmul) / 1e9, 1)}
try:
  import torch
  torch.backends.cuda.matmul.allow_tf32 = False
  ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
  def torch_matmul(): out["torch"] = ta @ tb; torch.cuda.synchronize()
  res["torch GFLOP/s"] = round(2 * N**3 / best(torch_matmul) / 1e9, 1)
  ref = out["torch"].cpu().numpy()
  res["max rel diff"] = float(np.abs(out["tg"].numpy() - ref).max() / np.abs(ref).max())
except ImportError: res["torch"] = "not installed"
print(json.dumps(res))
