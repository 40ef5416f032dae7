"""GPU virtual address ranges we hand out ourselves (UVM external ranges are placed at addresses the caller chooses): first fit from
the freed ranges, kept sorted with neighbours merged, so a long run that frees and allocates buffers of changing sizes reuses the
space instead of walking off the end; a freed range that reaches the top of what was handed out lowers the top."""
from __future__ import annotations
import bisect

class VARanges:
  def __init__(self, base:int, limit:int, align:int=1 << 16):
    self.base, self.limit, self.align, self.top = base, limit, align, base
    self.free: list[tuple[int, int]] = []  # (start, size), sorted by start, no two adjacent (they are merged)
  def span(self, size:int) -> int: return (max(size, 1) + self.align - 1) // self.align * self.align
  def take(self, size:int) -> int:
    """the start of a free range of size bytes (rounded up to the alignment): the first freed range that fits, split, else the top"""
    span = self.span(size)
    for i, (start, n) in enumerate(self.free):
      if n < span: continue
      if n == span: self.free.pop(i)
      else: self.free[i] = (start + span, n - span)
      return start
    if self.top + span > self.limit:
      raise MemoryError(f"no {span:#x} bytes of GPU virtual addresses left below {self.limit:#x} ({sum(n for _, n in self.free):#x} freed, in "
                        f"{len(self.free)} ranges)")
    self.top += span
    return self.top - span
  def give(self, va:int, size:int):
    """return a range take() handed out; merged with the freed ranges beside it"""
    span, i = self.span(size), bisect.bisect_left(self.free, (va, 0))
    prev, nxt = (self.free[i - 1] if i else None), (self.free[i] if i < len(self.free) else None)
    if (va - self.base) % self.align or va < self.base or va + span > self.top or (prev and prev[0] + prev[1] > va) or (nxt and va + span > nxt[0]):
      raise ValueError(f"GPU virtual range {va:#x}+{span:#x} was not handed out, or is free already")
    if prev and prev[0] + prev[1] == va: va, span, i = prev[0], span + prev[1], i - 1; self.free.pop(i)
    if nxt and va + span == nxt[0]: span += nxt[1]; self.free.pop(i)
    if va + span == self.top: self.top = va
    else: self.free.insert(i, (va, span))
