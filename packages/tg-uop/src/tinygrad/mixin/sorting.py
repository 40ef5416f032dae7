"""Sorting shared by UOp and Tensor: sort, argsort, topk, stable and exact in every dtype.
Dtypes of 32 bits or less sort packed keys: the value mapped to an int32 whose order is the sort order (floats by their bits, NaN above
everything, -0.0 equal to 0.0 but marked), in the high half of an int64 whose low half holds the element's index. Keys are unique, so
one compare of two int64 settles value, NaN, padding and stability at once, and the key gives back both the value and its index.
Short rows, or few rows in all: each key's rank is how many keys are below it, and output position r picks the key of rank r (O(n^2)
compares, two kernels). Long rows: a bitonic network over the keys padded to a power of two (O(n log^2 n) compares), its first stages
a rank sort of blocks of RANK_BLOCK keys. The row is rows of 2*MERGE_TAIL keys: a merge's stages across rows go two to a kernel, each
reading its partners' rows by a gather, and its stages within a row are one kernel. How far apart a stage's partners are is data (a
one-element buffer), so every merge runs the same few compiled programs.
topk with a small k selects instead: the least key of each group of g, the k groups with the least of those (found the same way) hold the
k smallest keys, and ranking their k*g keys picks them (a pass over the row, then work on rows g times shorter). A larger k, a small share
of a long row, finds the k-th key's value a digit at a time (a radix select: a counting pass over the row per digit), and the k keys at
most it are gathered into a row of k by a running count and sorted.
A value unpacked from a key is bits autograd cannot follow: its gradient goes back to the element its index names (a custom gradient, a
scatter of the incoming one). 64-bit dtypes rank (value, index) pairs with the comparisons spelled out, or sort (order, index) pairs by
the same network, the order an int64 whose order is the sort's.
A class using it provides the elementwise, movement, reduce, scan and select mixins."""
from __future__ import annotations
import math, operator
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod

# 64-bit dtypes: rows longer than this use the bitonic network, shorter ones the O(n^2) rank sort (one kernel to rank, one to pick) where
# the network is ~log2(n)^2/4 kernels, a few programs but each kernel ~0.1 s to schedule on a first sort. float64, best warm ms network /
# rank (a busy 2-core machine): 1x2048 82 / 5 (first sort 6.7 / 0.9 s), 1x4096 70 / 26, 16x4096 183 / 196, 1x16384 134 / 179
BITONIC_MIN = 2048
# the same for packed keys: rank over the row (n compares per element, two kernels) against the network's ~log2(n)^2/4 kernels, each
# a pass over 8-byte keys. The network won from n=64 up (kernel time, 16384x64: 16 against 34 ms; 4096x256: 17 against 79 ms)
PACKED_BITONIC_MIN = 32
# ... unless the whole rank sort is this few compares: the network's graph is ~log2(n)^2/4 kernels of python to build and schedule.
# Eager sorts, best ms network / rank (a busy 2-core machine): 16x128 5.0 / 1.7, 64x256 7.7 / 3.4, 16x512 11.1 / 4.7 (4M compares),
# 64x512 11.3 / 7.8 and 4096x64 8.1 / 10.8 (16M)
PACKED_RANK_MAX_COMPARES = 1 << 23
# the network's stages across rows per kernel: a fused stage doubles the rows each output reads (a gather each). Kernel time, 256x4096:
# two 39-52 ms, one 53-57, three 45-66; 1x1M: two 165, one 245, three 200 (the compares and loads outgrow the saved passes)
STAGES_PER_KERNEL = 2
# a merge's last stages, partners at most this far apart (within a row of 2*MERGE_TAIL keys), are one kernel: each row merges from its
# own loads, which its outputs share, with no gather. Kernel time 1x1M: 8 90-100 ms, 16 104, 4 118; 256x4096: 8 39-52, 16 36, 4 39, 1
# (one stage) 73
MERGE_TAIL = 8
# the network's first stages (blocks of this many keys) as a rank sort per block: b compares per key in one pass and a pick of b in a
# second, against log2(b)*(log2(b)+1)/2 stages
RANK_BLOCK = 32
# topk's candidates: k*g per row, g keys per group (see _smallest_keys), g the largest power of two (2 to SELECT_MAX_GROUP) whose ranks
# take at most SELECT_RANK_COMPARES compares over all rows ((k*g)^2 a row). Each level shrinks the rows g times, and on few rows the
# levels' python (graph, schedule-cache replay, ~3 kernels each) outweighs their ranks. Eager best ms of g = 4 / 8 / 16 / 32 / 64 in
# one process (a busy 2-core machine): 1x32000 k=50 8.6 / 7.3 / 6.0 / 5.0 / 5.4, 8x32000 k=50 7.8 / 7.4 / 7.1 / 7.8 / 11.5, 64x4096
# k=16 7.6 / 6.6 / 6.6 / 6.4 / 10.4, 1024x4096 k=16 15.9 / 14.6 / 23.7 / 31.2 / 81, 1x4096 k=64 4.4 / 3.7 / 3.9 / 4.3 / 9.0
SELECT_RANK_COMPARES, SELECT_MAX_GROUP = 1 << 22, 64
# topk with a larger k selects by digits or sorts the row (_digits_win): ranks of 2k candidates and more cost more than either
SELECT_MAX_K = 64
# bits of the order found per pass of topk's radix select (_smallest_by_digits)
DIGIT_BITS, DIGIT_BITS_LONG, DIGIT_BITS_LONG_MIN = 8, 11, 1 << 15
# parts of topk's scatters (_row_scatter), each a serial loop the cores share out
SCATTER_PARTS = 16
# topk's k past SELECT_MAX_K is selected by digits up to this share of the row, and up to the second share where the rows hold at least
# DIGITS_MANY elements in all; past it the row is sorted (the k kept are sorted too, by the network past a few thousand). Best ms digits /
# sort: 1x65536 k=4096 32/43, k=8192 62/52; 64x4096 k=256 15/38, k=512 32/31; 1024x4096 k=1024 103/409, k=2048 274/239; 1x1M k=262144
# 106/338, 16x65536 k=16384 68/184
DIGITS_MAX_SHARE, DIGITS_MAX_SHARE_MANY, DIGITS_MANY = 1 / 16, 1 / 4, 1 << 20
_I32_MAX, _I32_MIN, _I64_MAX, _I64_MIN = 2**31 - 1, -2**31, 2**63 - 1, -2**63

class SortingMixin:
  def sort(self, dim:int=-1, descending:bool=False) -> tuple:
    """(values, indices) sorted along dim, ascending unless descending; equal elements keep their order (stable). Indices are int32"""
    if not self.shape: return self, self._scalar_like(0, dtypes.int32)
    dim = self._resolve_dim(dim)
    self._int_axes("sort", (dim,))
    x = self.transpose(dim, -1)._computed_once()
    if x._packs(): values, indices = x._picked(*x._unpack_keys(x.detach()._sort_keys(descending)._sorted_keys(), descending))
    # the 64-bit sorts' values take their gradient as a pick's too: they come back as bits (-0.0 is kept so)
    else: values, indices = x._picked(*(x.detach()._bitonic_sort if x.shape[-1] > BITONIC_MIN else x.detach()._rank_sort)(descending))
    return values.transpose(dim, -1), indices.transpose(dim, -1)
  def _computed_once(self):
    """self stored before it is compared: every kernel of a sort reads an element several times (a rank compares each with all of its
    row), so a computed input (a logsigmoid, a sin) is worked out once instead of once per comparison. (It first hid an LLVM 22 x86 bug
    that such a recomputing rank kernel met, fixed where it is: runtime/ops_cpu.py, LLVMCompiler)"""
    return self if getattr(self, "uop", self).base.op in (Ops.BUFFER, Ops.AFTER) else self.contiguous()  # a view of memory is read
  def _picked(self, values, indices) -> tuple:
    """(values, indices): values, self's elements at indices along the last axis unpacked from keys built on self.detach(), with the
    gradient of a pick: each one's goes to the element its index names (a scatter, one pass over the indices)"""
    def backward(grad):
      axis = len(indices.shape) - 1
      # the scatter sums in the accumulator dtype (float for half): each element gets one pick at most, so the cast back is exact
      return (self._scatter_fold(indices._one_hot_at(self.shape[-1], axis + 1), grad, axis, "sum").cast(self.dtype),)
    return values._custom_gradient((self,), backward), indices
  def _packs(self) -> bool:
    """whether the last axis sorts by packed keys: a value of 32 bits or less, an index of 31, and room above the real keys' low halves
    (2n at most) for the network's distinct padding keys (p - n of them, p the next power of two)"""
    return self.dtype.itemsize <= 4 and isinstance(n := self.shape[-1], int) and n + (1 << (n - 1).bit_length()) <= 2**32

  # *** packed keys: (order-preserving int32 of the value) << 32 | index << 1 | (value is -0.0) ***
  def _sort_keys(self, descending:bool, at=None, order=None):
    """the int64 key of each element of the last axis; keys ascending is the stable sort, descending if asked. at: each element's index
    in its row (int64), where it is not its place on the axis; order: self._order(descending), where it is made already"""
    n = self.shape[-1]
    at = (self._arange(n, dtypes.int64).reshape((1,)*(len(self.shape)-1) + (n,)) if at is None else at) * 2
    o, neg_zero = order or self._order(descending)
    if neg_zero is not None: at = at + neg_zero.cast(dtypes.int64)  # -0.0 sorts as 0.0 (stable among zeros) and is told apart below the index
    return (o.cast(dtypes.int64) << 32) | at
  def _order(self, descending:bool) -> tuple:
    """(o, neg_zero): the int32 of each element whose order is the sort's (a key's high half), and where a float element is -0.0 (None
    for other dtypes)"""
    dt, neg_zero = self.dtype, None
    if dtypes.is_float(dt):
      x = self.cast(dtypes.float32)
      bits, zero = x.bitcast(dtypes.int32), x.eq(0)
      neg_zero = zero & (bits < 0)
      o = x.isnan().where(_I32_MAX, zero.where(0, bits))  # every NaN above +inf
      o = (o < 0).where(o ^ _I32_MAX, o)  # negative floats' bits run backwards: flip all but the sign
    elif dt is dtypes.uint32: o = self.bitcast(dtypes.int32) ^ _I32_MIN
    else: o = self.cast(dtypes.int32)
    return (~o if descending else o), neg_zero  # ~ reverses the value order, the index order stays ascending: ties keep their order
  def _unpack_keys(self, keys, descending:bool) -> tuple:
    """(values in self's dtype, int32 indices) of keys made by self._sort_keys"""
    o = (keys >> 32).cast(dtypes.int32)
    if descending: o = ~o
    indices = ((keys & 0xFFFFFFFF) >> 1).cast(dtypes.int32)
    if dtypes.is_float(self.dtype):
      bits = (keys & 1).eq(1).where(_I32_MIN, (o < 0).where(o ^ _I32_MAX, o))
      return bits.bitcast(dtypes.float32).cast(self.dtype), indices
    if self.dtype is dtypes.uint32: return (o ^ _I32_MIN).bitcast(dtypes.uint32), indices
    return o.cast(self.dtype), indices
  def _sorted_keys(self):
    """unique int64 keys sorted ascending along the last axis"""
    if self._sorts_by_network(): return self._bitonic_keys()
    rank = (self.unsqueeze(-2) < self.unsqueeze(-1)).sum(-1).contiguous()  # (..., n): keys below key i, its place
    return self.unsqueeze(-1)._pick(rank._one_hot_at(self.shape[-1], len(rank.shape)), -2)
  def _sorts_by_network(self) -> bool:
    """whether _sorted_keys takes the bitonic network (else the two-kernel rank sort)"""
    n, rows = self.shape[-1], prod(self.shape[:-1])
    return n > PACKED_BITONIC_MIN and not (isinstance(rows, int) and rows * n * n <= PACKED_RANK_MAX_COMPARES)
  def _digits_win(self, k:int) -> bool:
    """whether topk's k past SELECT_MAX_K is selected by digits (_smallest_by_digits) rather than cut from the sorted row: where the row
    takes the network (the rank sort is two kernels) and k is a small enough share of it"""
    n, rows = self.shape[-1], prod(self.shape[:-1])
    if not isinstance(rows, int) or not self._sorts_by_network(): return False
    return k <= n * (DIGITS_MAX_SHARE_MANY if rows * n >= DIGITS_MANY else DIGITS_MAX_SHARE)
  def _bitonic_keys(self):
    """unique int64 keys sorted ascending along the last axis by the bitonic network (_network), padded to a power of two with distinct
    keys above every real one (last). Its first stages, which sort blocks of RANK_BLOCK keys, are a rank sort of each block instead: two
    passes over the row where the network's take log2(b)*(log2(b)+1)/2 stages"""
    n, lead = self.shape[-1], tuple(self.shape[:-1])
    p = 1 << (n - 1).bit_length()
    keys = self.cat((self._arange(p - n, dtypes.int64) + (_I64_MAX - (p - n) + 1)).expand(lead + (p - n,)), dim=-1) if p != n else self
    b = min(p, RANK_BLOCK)
    blocks = keys.contiguous().reshape(lead + (p // b, b))  # stored: each key is compared with all of its block
    rank = (blocks.unsqueeze(-2) < blocks.unsqueeze(-1)).sum(-1, dtype=dtypes.int32)  # (..., p/b, b): keys below each in its block
    keys = blocks.unsqueeze(-1)._pick(rank.contiguous()._one_hot_at(b, len(lead) + 2), -2).reshape(lead + (p,)).contiguous()
    keys = self._network(keys, b, lambda x, y: x < y)
    return keys.shrink(tuple((0, s) for s in lead) + ((0, n),))
  def _network(self, x, run:int, before):
    """x (..., p), p a power of two, sorted along the last axis by a bitonic network from runs of `run` elements sorted already, where
    before(a, b) says element a goes first (never both ways). A merge of two runs of k/2 is log2(k) stages of compare-exchanges: the first
    pairs element i with i ^ (k-1), its mirror image in the other run, the next ones i with i ^ j for j = k/4 .. 1, and the lower position
    takes the element that goes first (every run ascends, so no stage has a direction). The row is rows of t = 2*MERGE_TAIL elements (at
    most `run`): a merge's stages within a row (j < t) are one kernel (the tail), partners on a size-2 axis of a reshape; the others are
    STAGES_PER_KERNEL to a kernel, which reads for row h the rows h ^ (j/t) by a gather (an indexed load, codegen/onehot_gather.py). How
    many rows apart is data: a one-element buffer that kernel reads and the next one's is made from, so every merge is the same few
    programs, compiled once (a bound Variable would do, but it takes one value per realize and a sort is one graph). One distinct program
    per stage made a first sort of a million floats compile ~90 kernels, 18 s"""
    lead, p = tuple(x.shape[:-1]), x.shape[-1]
    if run >= p: return x
    t = min(2 * MERGE_TAIL, run)
    rows = p // t
    h = self._arange(rows, dtypes.int64).reshape(rows, 1)
    out, read = h.reshape(rows, 1, 1), h.reshape(1, rows, 1)  # a gather's one-hot (h, r, 1): the row h written, the row r read
    def stages(x, q, mirror:bool):
      """STAGES_PER_KERNEL stages, the first q rows apart (its partner the mirror image if asked), each next one half as far (0: none)"""
      qs = [q] + [q // (1 << s) for s in range(1, STAGES_PER_KERNEL)]
      view = x.reshape(lead + (1, rows, t))
      # row h ends with elements of rows h ^ (the distances of some of the stages): c's bit s says whether stage s's is one of them
      at = {0: out}
      for s, m in enumerate([q * 2 - 1 if mirror else q] + qs[1:]): at |= {c | 1 << s: r ^ m for c, r in at.items()}
      vals = {c: (r % rows).eq(read).where(view, 0).sum(-2, dtype=x.dtype) for c, r in at.items() if c}  # % rows: in bounds, no guard
      vals[0] = x.reshape(lead + (rows, t))
      if mirror and t > 1: vals = {c: v.flip(-1) if c & 1 else v for c, v in vals.items()}
      for s in range(STAGES_PER_KERNEL):
        later = (h & qs[s]).ne(0)  # the upper of the two positions takes the element that goes last
        vals = {c: _compare_exchange(vals[c], vals[c | 1 << s], before, later) for c in vals if not c >> s & 1}
      return vals[0].reshape(lead + (p,)).contiguous()
    pair = self._scalar_like(True, dtypes.bool).reshape((1,))._pad(((1, 0),)).reshape(2, 1)  # [False, True] on the partners' axis
    def tail(x):
      for j in (t >> i for i in range(1, t.bit_length())):
        shape = lead + (p // (2*j), 2, j)  # partners i and i ^ j on a size-2 axis
        keep = tuple((0, s) for s in shape[:-2])
        lo, hi = (x.reshape(shape).shrink(keep + ((i, i + 1), (0, j))) for i in (0, 1))
        x = _compare_exchange(lo, hi, before, pair)
      return x.reshape(lead + (p,)).contiguous()
    first = self._scalar_like(run // t, dtypes.int64).reshape((1,)).contiguous()  # the first merge's mirror: run elements, run/t rows
    k = 2 * run // t
    while k <= rows:  # a merge into runs of k rows
      q = first
      for s in range(0, across := k.bit_length() - 1, STAGES_PER_KERNEL):
        x = stages(x, q, s == 0)
        if s + STAGES_PER_KERNEL < across: q = (q // (1 << STAGES_PER_KERNEL)).contiguous()
      if t > 1: x = tail(x)
      if (k := k * 2) <= rows: first = (first * 2).contiguous()
    return x
  def _smallest_keys(self, k:int, stride:int=1, elements=None, descending:bool=False):
    """the k smallest unique int64 keys of the last axis, ascending. Cut into groups of g keys, a row's k smallest keys lie in the k groups
    whose minimums are the k smallest minimums: those k minimums are k keys at most the k-th of them, and a group whose minimum is above
    it holds nothing below it. So the k smallest minimums (found the same way) name k*g candidates, and ranking those picks the keys.
    A key's index is its element's in the whole row: in a row of minimums it sits at that index // stride.
    elements: the row whose keys (sorted `descending`) self holds. Its candidates are gathered as bits and keyed after: with the key's math
    in the gather's loop, the few trips in flight each waited on a random load (topk 16 of 1024x4096: that kernel 1 ms, now 0.1 ms + 20 us)"""
    n, g = self.shape[-1], _group_size(k, self.shape[:-1])
    if n <= k * g: return self._rank_select(k)
    lead, groups = tuple(self.shape[:-1]), -(-n // g)
    def grouped(x, fill): return (x.pad(((0, 0),)*len(lead) + ((0, groups*g - n),), value=fill) if groups*g != n else x).reshape(lead + (groups, g))
    keys = grouped(self, _I64_MAX)
    # stored: the candidates' gather reads them again (every real group holds a real key: padding is never among the minimums' k smallest)
    least = keys.min(-1).contiguous()._smallest_keys(k, stride * g).contiguous()
    group = ((least & 0xFFFFFFFF) >> 1) // (stride * g)  # each key's place in this row, then its group: (..., k)
    onehot = group._one_hot_at(groups, len(lead) + 1).unsqueeze(-1)
    if elements is None: candidates = keys.unsqueeze(-3)._pick(onehot, -2)  # (..., k, g), one load each
    else:
      bits = elements.bitcast(_same_size_int(elements.dtype)) if dtypes.is_float(elements.dtype) else elements  # a pick adds: -0.0 + 0 = 0
      picked = grouped(bits, 0).unsqueeze(-3)._pick(onehot, -2).contiguous()
      at = group.cast(dtypes.int64).unsqueeze(-1) * g + self._arange(g, dtypes.int64)  # (..., k, g): the candidates' indices in the row
      candidates = (at < n).where(picked.bitcast(elements.dtype)._sort_keys(descending, at), _I64_MAX)
    return candidates.reshape(lead + (k * g,)).contiguous()._rank_select(k)
  def _rank_select(self, k:int):
    """the k smallest unique int64 keys of a short last axis, ascending: output position r picks the key with r keys below it"""
    rank = (self.unsqueeze(-2) < self.unsqueeze(-1)).sum(-1).contiguous()  # (..., n)
    # exactly one key has each rank, so a MAX picks it as a sum would; a sum became a scatter of the n keys (stage 6''), its rows a stride
    # apart and on one thread, where the MAX stays k*n vector compares per row (topk 16 of 1024x4096: 170 -> 40 us a pick; a short row's
    # sort, all n ranks picked, stays a sum: the MAX was 3% slower there)
    return rank._one_hot_at(k, len(rank.shape)).where(self.unsqueeze(-1), dtypes.min(self.dtype)).max(-2)

  def _smallest_by_digits(self, k:int, descending:bool):
    """the k smallest keys (self._sort_keys(descending)) of the last axis, ascending, without sorting the row (a radix select). The k-th
    smallest order value (a key's high half, as 0 .. 2**32-1) is found a digit at a time, high digits first: a pass counts the elements
    whose order starts with the digits found so far by their next digit (a one-hot sum the compiler runs as a scatter: one pass over the
    row), and the digit at which the count running over the digits reaches the rank still sought is the k-th's. The k smallest keys are
    the elements below it and the first ones (by index) equal to it: a running count of each kind (one scan) gives each its place in a row
    of k, a scatter stores the keys there, and that row is sorted"""
    lead, n = tuple(self.shape[:-1]), self.shape[-1]
    x = self.reshape(rows := prod(lead), n)
    def col(t, i:int): return t.shrink(((0, rows), (i, i + 1)))
    # stored: each pass reads it (4 bytes, no math); a narrow dtype's high digits, which the compiler would prove constant, are then not
    # ones it sees, and its counting passes stay scatters (one with a constant row and value keeps the dense sum: codegen/onehot_scatter.py)
    o, neg_zero = x._order(descending)
    u = (o := o.contiguous()).cast(dtypes.int64) - _I32_MIN
    # (rows, 2): the k-th's order so far (its digits found, zeros after) and its rank among the elements that share them (1 for the least)
    state = u._scalar_like(0).expand(rows, 1).cat(u._scalar_like(k).expand(rows, 1), dim=-1)
    bits = DIGIT_BITS_LONG if n >= DIGIT_BITS_LONG_MIN else DIGIT_BITS
    hi = 32
    while hi > 0:
      lo = max(0, hi - bits)
      digit = ((u >> lo) & ((1 << (hi - lo)) - 1)).cast(dtypes.int32)
      # every element adds to its digit's count, 0 where its higher digits are not the k-th's: a step's add waits on the last one to the same
      # count, and sending those elsewhere (out of range) made them all one chain (1M elements: 3.8 -> 1.6 ms a pass)
      ours = digit._scalar_like(1, dtypes.int32) if hi == 32 else (u >> hi).eq(col(state, 0) >> hi).cast(dtypes.int32)
      count = x._row_scatter(digit, ours.expand(digit.shape), 1 << (hi - lo), "sum")
      below = count._triangle(Ops.ADD, 0).contiguous() < col(state, 1)  # (rows, 2**bits): digits whose elements all rank before the k-th
      step = count._scalar_like(1 << lo, dtypes.int64).expand(count.shape).unsqueeze(1).cat(-count.cast(dtypes.int64).unsqueeze(1), dim=1)
      state = (state + below.unsqueeze(1).where(step, 0).sum(-1)).contiguous()  # the digit (a count of digits) and the rank past them
      hi = lo
    kth, rank = col(state, 0), col(state, 1).cast(dtypes.int32)
    less, same = u < kth, u.eq(kth)
    runs = less.unsqueeze(1).cat(same.unsqueeze(1), dim=1).cast(dtypes.int32)._running_sum()  # (rows, 2, n): one scan for both counts
    less_before, same_before = (runs.shrink(((0, rows), (i, i + 1), (0, n))).reshape(rows, n) for i in (0, 1))
    kept = less | (same & (same_before <= rank))
    # the keys left out fold their identity into a place of their own, for the same reason as the counts' elements. Stored: worked out
    # in the scatter's serial loop it took a core ~60 ops an element (1024x4096 k=100: 54 -> 49 ms, 64x50000 k=128: 41 -> 36)
    place = less.where(less_before - 1, kept.where(k - rank + same_before - 1, x._arange(n) % k)).contiguous()
    keys = kept.where(x._sort_keys(descending, order=(o, neg_zero)), dtypes.min(dtypes.int64))
    return x._row_scatter(place, keys, k, "amax")._sorted_keys().reshape(lead + (k,))
  def _row_scatter(self, at, x, size:int, op:str):
    """(rows, size): x (rows, n) folded by op ("sum" or "amax") into position `at` (rows, n; 0 <= at < size) of its row. The compiler's
    scatter (codegen/onehot_scatter.py) loops over the one-hot's axis serially, outermost, and shares the other axes out over the cores,
    so the elements are cut into SCATTER_PARTS parts, each such an axis walking memory in order: whole rows (a row's positions `size`
    past the last row's), or segments of a row, folded apart and combined after. With the rows as the other axis each step read an element
    of every row, a row apart (1024x4096, 256 positions: 33 ms, in parts 6); a row was one core's; and a reduce of fewer than 256 outputs
    over a long axis is cut in chunks (schedule/split_reduce.py), a scatter no more where they did not fill the row (k=65: 280 ms)"""
    rows, n = at.shape
    whole = math.gcd(rows, SCATTER_PARTS)
    segs, r = SCATTER_PARTS // whole, rows // whole  # segments of a row, rows of a part
    m = -(-n // segs)
    def cut(t, fill): return t.pad(((0, 0), (0, segs*m - n)), value=fill).reshape(whole, r, segs, m).permute(0, 2, 1, 3).reshape(whole*segs, r*m)
    at = at + (self._arange(rows, at.dtype) % r).reshape(rows, 1) * size
    parts = self._scatter_fold(cut(at, 0)._one_hot_at(r*size, 2), cut(x, 0 if op == "sum" else dtypes.min(x.dtype)), 1, op)
    parts = parts.reshape(whole, segs, r*size)
    return (parts.sum(1, dtype=x.dtype) if op == "sum" else parts.max(1)).reshape(rows, size)
  def _running_sum(self):
    """the inclusive running sum of the last axis as two plain triangles (mixin/scan.py), each stored: the axis cut into rows of about
    sqrt(n), each row's own running sum, and the totals of the rows before each. The compiler runs a stored triangle as one pass where it
    scans serially (a UOp graph's cumsum cannot ask and takes blocks of 8: ~2 kernels a level, 14 for a million), elsewhere in
    O(n*sqrt(n)) adds"""
    n, lead = self.shape[-1], tuple(self.shape[:-1])
    c = 1 << ((n - 1).bit_length() + 1) // 2
    keep = tuple((0, s) for s in lead)
    rows = self.pad(tuple((0, 0) for _ in lead) + ((0, -n % c),)).reshape(lead + (-(-n // c), c))._triangle(Ops.ADD, 0).contiguous()
    totals = rows.shrink(keep + ((0, rows.shape[-2]), (c - 1, c))).reshape(rows.shape[:-1])
    before = (totals._triangle(Ops.ADD, 0) - totals).contiguous()
    return (rows + before.unsqueeze(-1)).reshape(lead + (rows.shape[-2] * c,)).shrink(keep + ((0, n),))

  # *** (value, index) pairs compared in full: 64-bit dtypes ***
  def _rank_sort(self, descending:bool) -> tuple:
    """(values, int32 indices) of the last axis: element i goes to its rank, the count of elements before it in the sort"""
    n = self.shape[-1]
    a, b = self.unsqueeze(-1), self.unsqueeze(-2)   # a: element i (rows), b: element j (columns)
    pos = self._arange(n)
    earlier = pos.reshape(n, 1) > pos.reshape(1, n)  # j comes before i
    less, tie = (b > a if descending else b < a), b.eq(a)
    if dtypes.is_float(self.dtype):  # NaN is above everything, like torch and numpy: last ascending, first descending
      na, nb = a.isnan(), b.isnan()
      less, tie = less | ((nb & na.logical_not()) if descending else (na & nb.logical_not())), tie | (na & nb)
    rank = (less | (tie & earlier)).sum(-1)  # (..., n): where element i goes
    onehot = rank._one_hot_at(n, len(rank.shape))  # (..., i, r)
    # a float is picked as its bits: the pick is a sum, which made -0.0 0.0
    bits = self.bitcast(_same_size_int(self.dtype)) if dtypes.is_float(self.dtype) else self
    values = bits.unsqueeze(-1)._pick(onehot, -2)
    return values.bitcast(self.dtype) if bits is not self else values, pos.reshape(n, 1)._pick(onehot, -2).cast(dtypes.int32)
  def _bitonic_sort(self, descending:bool) -> tuple:
    """(values, int32 indices) of the last axis sorted by the bitonic network (_network) on (order, index) pairs, order an int64 whose
    order is the sort's (as _order's, in 64 bits), padded to a power of two with pairs above every real one. A pair is one tensor, order
    and index on a leading axis of 2: as two, each kernel wrote one from the same compare, which the scheduler stored as a third"""
    n, lead, dt = self.shape[-1], tuple(self.shape[:-1]), self.dtype
    p = 1 << (n - 1).bit_length()
    bits = self if dt is dtypes.int64 else self.bitcast(dtypes.int64)
    if dtypes.is_float(dt):
      o = self.isnan().where(_I64_MAX, self.eq(0).where(0, bits))  # every NaN above +inf, -0.0 with 0.0
      o = (o < 0).where(o ^ _I64_MAX, o)  # negative floats' bits run backwards: flip all but the sign
    else: o = bits ^ _I64_MIN if dt is dtypes.uint64 else bits
    o = (~o if descending else o).pad(((0, 0),)*len(lead) + ((0, p - n),), value=_I64_MAX)
    idx = self._arange(p, dtypes.int64).reshape((1,)*len(lead) + (p,)).expand(lead + (p,))
    def parts(x): return tuple(x.shrink(((i, i + 1),) + tuple((0, s) for s in x.shape[1:])) for i in (0, 1))
    def before(x, y):
      (xo, xi), (yo, yi) = parts(x), parts(y)
      return (xo < yo) | (xo.eq(yo) & (xi < yi))
    # stored first: the network's first kernel then is the program all its others are
    pairs = self._network(o.unsqueeze(0).cat(idx.unsqueeze(0), dim=0).contiguous(), 1, before)
    idx = parts(pairs)[1].reshape(lead + (p,)).shrink((None,)*len(lead) + ((0, n),)).cast(dtypes.int32)
    # the values gathered as bits: a gather is a one-hot sum, which could make -0.0 0.0
    values = bits.unsqueeze(-2)._pick(idx._one_hot_at(n, len(lead) + 1), -1)
    return (values if dt is dtypes.int64 else values.bitcast(dt)), idx
  def argsort(self, dim:int=-1, descending:bool=False): return self.sort(dim, descending)[1]
  def topk(self, k:int, dim:int=-1, largest:bool=True, sorted_:bool=True) -> tuple:
    """(values, indices) of the k largest (or smallest) elements along dim, in sorted order; ties: the lower index first"""
    k = _int_arg(k, "topk k")
    dim = self._resolve_dim(dim)
    if self.shape: self._int_axes("topk", (dim,))
    n = self.shape[dim] if self.shape else 1  # bound before the test: a negative k short-circuits past a walrus in it
    if not 0 <= k <= n:
      raise ValueError(f"topk k={k} is out of range for axis {dim} of shape {tuple(self.shape)} (0 <= k <= {n})")
    if not self.shape or k == 0 or not (x := self.transpose(dim, -1)._computed_once())._packs() or (k > SELECT_MAX_K and not x._digits_win(k)):
      values, indices = self.sort(dim, descending=largest)
      keep = tuple((0, k) if d == dim else None for d in range(len(self.shape)))
      return values.shrink(keep), indices.shrink(keep)
    elements = x.detach()
    if k > SELECT_MAX_K: keys = elements._smallest_by_digits(k, largest)
    else: keys = elements._sort_keys(largest)._smallest_keys(k, elements=elements, descending=largest)
    values, indices = x._picked(*x._unpack_keys(keys, largest))
    return values.transpose(dim, -1), indices.transpose(dim, -1)

def _compare_exchange(x, y, before, later):
  """x, or y where y goes first and `later` is False or x goes first and it is True (before: the network's)"""
  return (before(y, x) != later).where(y, x)

def _int_arg(x, what:str) -> int:
  """x as a python int (a numpy int too, as torch takes it); a float or anything else is a TypeError, as in torch"""
  try: return operator.index(x)
  except TypeError: raise TypeError(f"{what} must be an int, got {type(x).__name__} {x!r}") from None

def _same_size_int(dt):
  return {1: dtypes.int8, 2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[dt.itemsize]

def _group_size(k:int, lead:tuple) -> int:
  """keys per group of topk's selection over rows of shape `lead` (a symbolic one counts as many rows): see SELECT_RANK_COMPARES"""
  rows = prod(lead) if all(isinstance(s, int) for s in lead) else SELECT_RANK_COMPARES
  g = 2
  while g < SELECT_MAX_GROUP and rows * (k * g * 2) ** 2 <= SELECT_RANK_COMPARES: g *= 2
  return g
