"""Running reductions shared by UOp and Tensor: cumsum, cumprod, cummax/cummin (with indices), logcumsumexp.
Where the compiler runs a prefix reduce as one pass (a device without work items: tinygrad.codegen.prefix_scan; Tensor's
`_scan_serially` says), the scan is the plain triangle over the whole axis: row i reduces x[j] for j <= i and the fill elsewhere, which
codegen turns into one loop carrying the accumulator, O(n) per row. It is realized on its own (contiguous), and so is its gradient
(contiguous_backward), so neither lands inside another reduce's loop, where no loop carries it. cumprod and cummax keep the blocked form
where a gradient flows: the gradient of a product or max reduce over the whole triangle is no prefix reduce, O(n^2).
Elsewhere a short axis (at most SCAN_BLOCK) reduces that square, O(n^2) work. A long axis is cut into blocks of SCAN_BLOCK: each block
scans its own square, the block totals are scanned the same way (one level per factor of SCAN_BLOCK) and shifted by one block, and each
element combines its block's running value with the total of the blocks before it: O(n * SCAN_BLOCK) work in about two kernels per
level, where the square over the whole axis was O(n^2) (a 1024-wide row did a million adds per row). A class using it provides the
elementwise, movement and reduce mixins."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.mixin.reduce import _NARROW_FLOATS

# the block of the long-axis scan. A block's square is B adds per element; 8 keeps that small and makes the square's reduce one the CPU
# heuristic unrolls into vector registers (16 fell out of them and was ~7x slower per element at 1024x1024)
SCAN_BLOCK = 8
# a serial MAX scan's carried chain takes one block of this many elements a step (see _serial_max_scan). cummax's values 1024x1024 at 2
# threads, kernel time: the plain scan 1.3 ms, blocks of 4 0.5 (two kernels), 8 1.3, 16 3.6 (each element's in-block prefix is a reduce
# over its block)
SERIAL_MAX_BLOCK = 4

def _one_square(n) -> bool:
  """whether the axis scans as one square: a short one, or a symbolic one (its block count is unknown when the graph is built)"""
  return not isinstance(n, int) or n <= SCAN_BLOCK

class ScanMixin:
  def _scan_serially(self) -> bool:
    """whether the compiler turns the whole axis's triangle into one pass for this value's device (Tensor asks codegen; a UOp graph has
    no device to ask and keeps the blocked form)"""
    return False
  def _grad_flows(self) -> bool:
    """whether a gradient will flow back through self (Tensor says; a UOp graph has no autograd)"""
    return False
  def _lower_tri(self, n:int):
    """(n, n) bool, True where column j <= row i: the elements of prefix i"""
    at = self._arange(n)
    return at.reshape(n, 1) >= at.reshape(1, n)
  def _combine(self, op:Ops, other):
    return self + other if op is Ops.ADD else self * other if op is Ops.MUL else self.maximum(other)
  def _blocks(self, fill, size:int=SCAN_BLOCK):
    """the last axis padded with fill to whole blocks, as (..., blocks, size)"""
    lead, n = tuple(self.shape[:-1]), self.shape[-1]
    nb = -(-n // size)
    x = self.pad(((0, 0),)*len(lead) + ((0, nb*size - n),), value=fill) if nb*size != n else self
    return x.reshape(lead + (nb, size))
  def _shift_block(self, fill, by:int=1, axis:int=-1):
    """self moved `by` places on along axis, fill first: block totals moved one block on (entry b is the total of block b-1)"""
    axis = self._resolve_dim(axis)
    pads = tuple((by, 0) if d == axis else (0, 0) for d in range(len(self.shape)))
    return self.pad(pads, value=fill).shrink(tuple((0, s) for s in self.shape))
  def _unblock(self, n:int):
    return self.reshape(tuple(self.shape[:-2]) + (self.shape[-2]*self.shape[-1],)).shrink(tuple((0, s) for s in self.shape[:-2]) + ((0, n),))
  def _scan(self, op:Ops, fill):
    """inclusive running op (ADD, MUL or MAX) along the last axis"""
    n = self.shape[-1]
    if _one_square(n): return self._triangle(op, fill)
    xb = self._blocks(fill)
    totals = xb._reduce(op, -1)
    if totals.shape[-1] > SCAN_BLOCK: totals = totals.contiguous()  # the next level blocks it again: read once, not recomputed per read
    before = totals._shift_block(fill)._scan(op, fill).contiguous()
    return xb._scan(op, fill)._combine(op, before.unsqueeze(-1))._unblock(n)
  def _triangle(self, op:Ops, fill):
    """the inclusive running op along the last axis as one reduce over the whole axis (row i: x[j] for j <= i)"""
    return self._lower_tri(self.shape[-1]).where(self.unsqueeze(-2), fill)._reduce(op, -1)
  def _affine_scan(self, b, axis:int):
    """s along axis (>= 0) with s[i] = self[i] * s[i-1] + b[i] and s[-1] = 0, by blocks. A run of these steps is one step too:
    (product of its self's, its s from 0), the later run's after the earlier one's (a2 a1, a2 s1 + s2). Each block composes its runs
    by doubling (log2 SCAN_BLOCK elementwise steps), the block totals are scanned the same way, and each element takes the s its block
    starts from through its own run's product. The blocks split axis in place: along axis 0 the axes after it stay the inner, contiguous
    loop (transposed to the last axis, the strided reads made the scan 6x slower)"""
    n, size = self.shape[axis], SCAN_BLOCK
    nb, inner = -(-n // size), axis + 1
    pads = tuple((0, nb*size - n) if d == axis else (0, 0) for d in range(len(self.shape)))
    blocked = tuple(self.shape[:axis]) + (nb, size) + tuple(self.shape[inner:])
    a, s = self.pad(pads, value=1).reshape(blocked), b.pad(pads, value=0).reshape(blocked)
    step = 1
    while step < size:  # each element's run grows from `step` elements to twice that, the run `step` before it first
      a, s = a * a._shift_block(1, step, inner), s + a * s._shift_block(0, step, inner)
      step *= 2
    if nb > 1:
      last = tuple((size-1, size) if d == inner else (0, k) for d, k in enumerate(blocked))
      block_a, block_s = (t.shrink(last).reshape(blocked[:inner] + blocked[inner+1:]) for t in (a, s))
      if nb > size: block_a, block_s = block_a.contiguous(), block_s.contiguous()  # read by each level below
      # stored: with the block's start broadcast along the block, what read it fused (a log, a gradient) ran the block's axis as the
      # CPU heuristic's inner loop, unvectorized (6x slower along axis 0)
      s = (s + a * block_a._affine_scan(block_s, axis)._shift_block(0, 1, axis).contiguous().unsqueeze(inner)).contiguous()
    return s.reshape(tuple(self.shape[:axis]) + (nb*size,) + tuple(self.shape[inner:])).shrink(tuple((0, k) for k in self.shape))
  def _affine_scan_with_gradient(self, b, axis:int):
    """_affine_scan whose gradient reaches b (self gets none) as the same scan run backwards: b[j]'s is the sum over i >= j of g[i]
    self[j+1]...self[i], so u[j] = g[j] + self[j+1] u[j+1]. Autograd through the blocks' doubling steps read each level's gradient at
    every offset of every level below, unstored: exponential (a 256x256 backward took 157 ms)"""
    if not b._grad_flows(): return self._affine_scan(b, axis)
    following = self.flip(axis)._shift_block(1, 1, axis)  # self[j+1] at j, flipped
    return self._affine_scan(b.detach(), axis)._custom_gradient((b,), lambda g: (following._affine_scan(g.flip(axis), axis).flip(axis),))
  def _serial_max_scan(self, fill):
    """the running MAX along the last axis where the compiler scans serially, its carried chain a step per block: the loop carries the
    max of the blocks before (each block's own max is elementwise, off the chain) and each element takes the max of that and of its
    block's prefix (a short plain reduce). A float MAX takes 4 dependent ops, so the one-element chain bounded the plain scan. MAX is
    associative (the first NaN, else the later of equal operands, in any grouping): the same values as the plain scan"""
    n, size = self.shape[-1], SERIAL_MAX_BLOCK
    xb = self._blocks(fill, size)
    lead = tuple((0, s) for s in xb.shape[:-1])
    col = [xb.shrink(lead + ((i, i+1),)).reshape(xb.shape[:-1]) for i in range(size)]
    block = col[0]
    for c in col[1:]: block = block.maximum(c)
    before = block._shift_block(fill)._triangle(Ops.MAX, fill).contiguous().unsqueeze(-1)
    own = self._lower_tri(size).where(xb.unsqueeze(-2), fill)._reduce(Ops.MAX, -1)  # (..., blocks, size): each element's block prefix
    return before.maximum(own)._unblock(n)  # before first: the block's elements come later and win ties, as in the plain scan
  def _serial(self, axis:int) -> bool:
    """the whole axis's triangle, realized: a short axis is one square in either form (and codegen scans it where it can), unrealized"""
    return isinstance(n := self.shape[axis], int) and n > SCAN_BLOCK and self._scan_serially()
  def _scan_axis(self, axis:int, op:Ops, fill):
    if self._serial(axis): return self.contiguous_backward().transpose(axis, -1)._triangle(op, fill).transpose(axis, -1)
    return self.transpose(axis, -1)._scan(op, fill).transpose(axis, -1)
  def _scanned(self, ret, axis:int):
    """a serial scan's result realized: in a later reduce's kernel its loop would be that reduce's, which carries no accumulator"""
    return ret.contiguous() if self._serial(axis) else ret
  def _scannable(self, axis:int) -> bool:
    # a symbolic length is scanned: the square over it has no rows when it is 0
    return bool(self.shape) and (not isinstance(n := self.shape[self._resolve_dim(axis)], int) or n != 0)
  def cumsum(self, axis:int=0):
    """running sum along axis in sum's dtype (narrow floats are summed in float32 and answered in their own dtype, like sum)"""
    if not self._scannable(axis): return self.sum(())  # nothing to accumulate: a sum over no axes is self in sum's dtype
    ret = self.cast(dtypes.sum_acc_dtype(self.dtype))._scan_axis(axis := self._resolve_dim(axis), Ops.ADD, 0)
    return self._scanned(ret.cast(self.dtype) if self.dtype in _NARROW_FLOATS else ret, axis)
  def cumprod(self, axis:int):
    """running product along axis, multiplied in sum_acc_dtype and answered in self's dtype like prod (int8 stays int8, wrapping)"""
    if not self._scannable(axis): return self.prod(())
    x, axis = self.cast(dtypes.sum_acc_dtype(self.dtype)), self._resolve_dim(axis)
    if self._grad_flows():  # a product reduce's gradient is no prefix reduce: over the whole triangle it would be O(n^2)
      return x.transpose(axis, -1)._scan(Ops.MUL, 1).transpose(axis, -1).cast(self.dtype)
    return self._scanned(x._scan_axis(axis, Ops.MUL, 1), axis).cast(self.dtype)
  def _running_max_at(self, at):
    """(running max along the last axis, the `at` of the last element equal to it, or of the last NaN); at: ints ascending along the
    axis, -1 in padding. The index rides with the value through the blocks: a block's own (max, at) wins ties, its positions being later"""
    n, low = self.shape[-1], self.dtype.min
    if _one_square(n):
      tri, x = self._lower_tri(n), self.unsqueeze(-2)
      values = tri.where(x, low).max(-1)
      same = x.eq(values.unsqueeze(-1))
      if dtypes.is_float(self.dtype): same = same | (x.isnan() & values.isnan().unsqueeze(-1))
      return values, (tri & same).where(at.unsqueeze(-2), -1).max(-1)
    xb, ab = self._blocks(low), at._blocks(-1)
    values, where = xb._running_max_at(ab)
    last = tuple((0, s) for s in values.shape[:-1]) + ((SCAN_BLOCK-1, SCAN_BLOCK),)
    bv, ba = values.shrink(last).reshape(values.shape[:-1]), where.shrink(last).reshape(values.shape[:-1])
    if bv.shape[-1] > SCAN_BLOCK: bv, ba = bv.contiguous(), ba.contiguous()
    before_v, before_a = bv._shift_block(low)._running_max_at(ba._shift_block(-1))
    before_v, before_a = before_v.contiguous().unsqueeze(-1), before_a.contiguous().unsqueeze(-1)
    own = values >= before_v
    if dtypes.is_float(self.dtype): own = own | values.isnan()
    return own.where(values, before_v)._unblock(n), own.where(where, before_a)._unblock(n)
  def cummax(self, axis:int=0) -> tuple:
    """(running max along axis, the index of the last element equal to it) like torch; indices are int32 like argmax"""
    if not self._scannable(axis):  # 0-d (its one element is index 0) or an empty axis
      zeros = self._scalar_like(0, dtypes.int32)
      return self, zeros.reshape((1,)*len(self.shape)).expand(self.shape) if self.shape else zeros
    axis = self._resolve_dim(axis)
    x = self.transpose(axis, -1)
    at = self._arange(x.shape[-1]).reshape((1,)*(len(x.shape)-1) + (x.shape[-1],)).expand(x.shape)
    if self._serial(axis) and not self._grad_flows():  # a max reduce's gradient over the whole triangle would be O(n^2)
      # the last k <= i with x[k] equal to its own running max (or NaN) is the last one equal to the running max at i: a second scan
      # along the last axis by blocks; along another, the lanes of the axes after it already run side by side (a chain per lane).
      # The index's scan stays plain: by blocks its input became a kernel of its own (read by two), 1024x1024 0.7 ms slower in all
      # by blocks where a float's NaN-aware MAX would chain along the last axis; an int's plain scan codegen runs by lanes there
      # (prefix_scan.lower_lane_scans; int32 1024x1024 at one thread: 0.45 ms by blocks, 0.24 by lanes)
      last_float = axis == len(self.shape) - 1 and dtypes.is_float(self.dtype)
      values = x._serial_max_scan(x.dtype.min) if last_float else x._triangle(Ops.MAX, x.dtype.min)
      values = values.transpose(axis, -1).contiguous()
      same = x.eq(values.transpose(axis, -1))
      # a NaN element's running max is NaN: its own test is enough (the index's loop does one op less per element: ~15% of cummax)
      if dtypes.is_float(self.dtype): same = same | x.isnan()
      return values, same.where(at, -1)._triangle(Ops.MAX, dtypes.min(at.dtype)).cast(dtypes.int32).transpose(axis, -1).contiguous()
    values, idx = x._running_max_at(at)
    return values.transpose(axis, -1), idx.cast(dtypes.int32).transpose(axis, -1)
  def cummin(self, axis:int=0) -> tuple:
    values, idx = self._inverse().cummax(axis)
    return values._inverse(), idx
  def logcumsumexp(self, axis:int=0):
    """log of the running sum of exp along axis, each prefix shifted by its own running max m: out[i] = m[i] + log(s[i]), s[i] the sum
    of exp(x[j] - m[i]) over j <= i, which is at least 1 (its max's term), so nothing overflows and no term that counts underflows
    (one shift by the whole axis's max took [1, 200] to [-inf, 200], and a NaN anywhere to all NaN). Where m grows the sum so far is
    rescaled: s[i] = exp(m[i-1] - m[i]) s[i-1] + exp(x[i] - m[i]), a scan of two exps per element, not one per pair. m gets no
    gradient: the value does not depend on it. Narrow floats are computed in float32 and rounded once"""
    x = self._float_cast()
    if not self._scannable(axis): return x.sum(())
    if x.dtype in _NARROW_FLOATS: return x.cast(dtypes.float32).logcumsumexp(axis).cast(x.dtype)
    axis = self._resolve_dim(axis)
    xt = x.transpose(axis, -1)
    if _one_square(n := xt.shape[-1]):  # each row's log-sum-exp, shifted by its own max
      return self._lower_tri(n).where(xt.unsqueeze(-2), -math.inf).logsumexp(-1).transpose(axis, -1)
    running = x._scan_axis(axis, Ops.MAX, -math.inf).detach().contiguous()  # read by three kernels
    shift = running.isinf().where(0, running)  # all -inf so far (a sum of 0) or an inf seen (of inf): shifted by 0, as logsumexp is
    before = running._shift_block(-math.inf, axis=axis)
    # 1 where m stays (infinities too, whose difference is NaN); 0 where it leaves -inf, whose sum so far is 0
    rescale = before.eq(running).where(1, (before - running).exp())
    # both read by the scan at several offsets: each exp once
    return rescale.contiguous()._affine_scan_with_gradient((x - shift).exp().contiguous(), axis).log() + shift
