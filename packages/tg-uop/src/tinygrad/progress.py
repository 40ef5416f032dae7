"""tinygrad's progress bar (`from tinygrad.helpers import tqdm, trange`): the calls programs written for tinygrad make, with no third-party
package. One line on stderr, redrawn at most `rate` times a second:  desc:  40%|████      | 4/10 [00:02<00:03, 1.98it/s]"""
from __future__ import annotations
import math, shutil, sys, time
from typing import Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")
_BLOCKS = " ▏▎▍▌▋▊▉█"

def _clock(s:float) -> str:
  m, s = divmod(int(s), 60)
  h, m = divmod(m, 60)
  return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"

def _scaled(x:float, scale:bool) -> str:
  """x with a k/M/G/... prefix when scale (1000s), else as a count"""
  if not scale: return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"
  for prefix in ("", "k", "M", "G", "T", "P"):
    if abs(x) < 999.5: return f"{x:.{0 if prefix == '' and float(x).is_integer() else 2}f}{prefix}"
    x /= 1000
  return f"{x:.2f}E"

class tqdm(Generic[T]):
  """`for x in tqdm(xs, desc="load")`, or `with tqdm(total=n, unit="B", unit_scale=True) as bar: bar.update(k)`. total defaults to
  len(iterable); disable=True draws nothing"""
  def __init__(self, iterable:Iterable[T]|None=None, desc:str="", disable:bool|None=False, unit:str="it", unit_scale:bool=False,
               total:int|None=None, rate:int=100):
    if total is None and iterable is not None:
      try: total = len(iterable)  # type: ignore[arg-type]
      except TypeError: total = None
    self.iterable, self.disable, self.unit, self.unit_scale, self.rate, self.t = iterable, bool(disable), unit, unit_scale, rate, total
    self.desc, self.n, self.st, self._drawn, self._closed = f"{desc}: " if desc else "", 0, time.perf_counter(), -math.inf, False
    self.update(0)
  def __iter__(self) -> Iterator[T]:
    if self.iterable is None: raise TypeError("tqdm(): nothing to iterate over: pass an iterable, or call update() yourself")
    for x in self.iterable:
      yield x
      self.update(1)
    self.update(close=True)
  def __enter__(self) -> tqdm[T]: return self
  def __exit__(self, *exc): self.update(close=True)
  def set_description(self, desc:str):
    self.desc = f"{desc}: " if desc else ""
    self._draw()
  def update(self, n:int=0, close:bool=False):
    self.n += n
    if close and self._closed: return  # iterated inside `with`: the loop's end and __exit__ both close
    if close or time.perf_counter() - self._drawn >= 1 / self.rate: self._draw()
    if close:
      self._closed = True
      if not self.disable: print(file=sys.stderr, flush=True)
  @staticmethod
  def write(s:str):
    """print a line above the bar (the bar is drawn again on its next update)"""
    print(f"\r\033[K{s}", file=sys.stderr, flush=True)
  def _draw(self):
    self._drawn = now = time.perf_counter()
    if self.disable: return
    elapsed, total = now - self.st, self.t
    speed = self.n / elapsed if elapsed > 0 and self.n else 0.0
    rate = f"{_scaled(speed, self.unit_scale)}{self.unit}/s" if speed >= 1 or not speed else f"{_scaled(1 / speed, False)}s/{self.unit}"
    count = f"{_scaled(self.n, self.unit_scale)}/{_scaled(total, self.unit_scale)}" if total else _scaled(self.n, self.unit_scale)
    left = f"<{_clock((total - self.n) / speed)}" if total and speed else ("<?" if total else "")
    suffix = f"{count} [{_clock(elapsed)}{left}, {rate if speed else '?' + self.unit + '/s'}]"
    if not total:
      print(f"\r\033[K{self.desc}{suffix}", end="", file=sys.stderr, flush=True)
      return
    frac = min(1.0, self.n / total)
    prefix = f"{self.desc}{100 * frac:3.0f}%|"
    width = max(1, shutil.get_terminal_size((80, 20)).columns - len(prefix) - len(suffix) - 3)
    full, part = divmod(int(frac * width * 8), 8)
    bar = ("█" * full + (_BLOCKS[part] if full < width else "")).ljust(width)
    print(f"\r\033[K{prefix}{bar}| {suffix}", end="", file=sys.stderr, flush=True)

def trange(n:int, **kwargs) -> tqdm[int]:
  """tqdm(range(n), ...)"""
  return tqdm(range(n), total=n, **kwargs)
