"""Memory planning for a captured step: buffers that only live inside it share memory when their lifetimes don't overlap."""
from __future__ import annotations
from tinygrad.device import Buffer, Device

def plan_memory(steps:list[list[Buffer]], plannable:list[Buffer]) -> dict[Buffer, Buffer]:
  """steps: the buffers each item of the step uses, in run order; plannable: buffers first written by the step and dead after it.
  Returns, for each plannable buffer, the buffer to use instead (itself, or one of equal bytes whose last use came before its first
  use, viewed as its dtype). Every replay runs the whole step, so the same sharing holds from one step to the next."""
  first: dict[Buffer, int] = {}
  last: dict[Buffer, int] = {}
  todo = set(plannable)
  for i, bufs in enumerate(steps):
    for b in bufs:
      if b in todo: first.setdefault(b, i); last[b] = i
  free: dict[tuple, list[Buffer]] = {}  # (device, bytes[, dtype]) -> bases no longer in use
  held: list[tuple[int, tuple, Buffer]] = []  # (last use, key, base) of bases in use
  ret: dict[Buffer, Buffer] = {}
  for b in sorted(first, key=lambda b: first[b]):
    for h in [h for h in held if h[0] < first[b]]:
      held.remove(h)
      free.setdefault(h[1], []).append(h[2])
    # a device without buffer views shares only between buffers of one dtype
    key = (b.device, b.nbytes) if hasattr(Device[b.device].allocator, "_offset") else (b.device, b.nbytes, b.dtype)
    base = free[key].pop() if free.get(key) else b
    ret[b] = base if base.dtype == b.dtype else base.view(b.size, b.dtype, 0).ensure_allocated()  # a view is allocated from its base
    held.append((last[b], key, base))
  return ret
