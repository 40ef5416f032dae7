"""Boolean masks over 1M floats: x[mask], x[mask] = 0, masked_select and nonzero, eager (realized, device synchronized), beside numpy and
torch when importable (each checked against numpy first). Best and median of RUNS calls after a warm-up call, in milliseconds.
Usage: python bench/mask_index.py [n, default 1048576]"""
import sys, time
import numpy as np
from tinygrad import Tensor, Device

RUNS = 7

def timed(fn) -> tuple[float, float]:
  fn()
  ts = []
  for _ in range(RUNS):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts) * 1e3, sorted(ts)[len(ts)//2] * 1e3

def main(n:int):
  try: import torch
  except ImportError: torch = None
  a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
  t, m = Tensor(a).realize(), Tensor(a > 0).realize()
  dev = Device[Device.DEFAULT]
  def tg_write():
    b = t.clone().realize()
    b[m] = 0.0
    b.realize()
  def np_write():
    b = a.copy()
    b[a > 0] = 0.0
  cases = {"x[mask]": (lambda: (t[m].realize(), dev.synchronize()), lambda: a[a > 0], lambda p, pm: p[pm]),
           "x[mask] = 0": (tg_write, np_write, lambda p, pm: p.clone().__setitem__(pm, 0.0)),
           "masked_select": (lambda: (t.masked_select(m).realize(), dev.synchronize()), lambda: a[a > 0], lambda p, pm: p.masked_select(pm)),
           "nonzero": (lambda: (m.nonzero().realize(), dev.synchronize()), lambda: np.argwhere(a > 0), lambda p, pm: pm.nonzero())}
  np.testing.assert_array_equal(t[m].numpy(), a[a > 0])
  np.testing.assert_array_equal(m.nonzero().numpy(), np.argwhere(a > 0))
  p, pm = (torch.from_numpy(a), torch.from_numpy(a > 0)) if torch is not None else (None, None)
  print(f"{'case':16s} {'tg best/median ms':>20s} {'numpy':>16s} {'torch':>16s}")
  for name, (tg_fn, np_fn, torch_fn) in cases.items():
    cols = [timed(tg_fn), timed(np_fn)] + ([timed(lambda: torch_fn(p, pm))] if torch is not None else [])
    print(f"{name:16s} " + " ".join(f"{b:9.2f} /{md:6.2f}" for b, md in cols))

if __name__ == "__main__": main(int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20)
