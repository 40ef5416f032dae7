"""The sampling rule of the benches that compare with numpy/torch in one process: the fastest of at least `runs` runs after a warm-up,
more while they add up to under MIN_SAMPLE_S. A numpy/torch call's BLAS/OpenMP threads spin for ~0.1 s after it and take a core: the
first runs of a 2-thread kernel right after one come out up to 2x slow, so a short sample would measure that"""
import time

MIN_SAMPLE_S = 0.3

def best(fn, runs:int) -> float:
  fn()
  ts = []
  while len(ts) < runs or sum(ts) < MIN_SAMPLE_S:
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)
