"""Tensor construction without running kernels: shapes, dtypes, promotion, devices and the errors people see."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes, Device
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, KernelInfo

# *** creation: dtype inference and shapes ***

@pytest.mark.parametrize("data, shape, dtype", [
  (3, (), dtypes.int32), (3.0, (), dtypes.float32), (True, (), dtypes.bool), ([], (0,), dtypes.float32), (None, (0,), dtypes.float32),
  ([[1, 2], [3, 4]], (2, 2), dtypes.int32), ([1, 2.0], (2,), dtypes.float32), ([True, False], (2,), dtypes.bool),
  ([True, 2], (2,), dtypes.int32), ([[[]]], (1, 1, 0), dtypes.float32), ((1, 2, 3), (3,), dtypes.int32), (b"abcd", (4,), dtypes.uint8)])
def test_infer(data, shape, dtype):
  t = Tensor(data)
  assert t.shape == shape and t.dtype is dtype and t.device == Device.DEFAULT

def test_explicit_dtype_and_device():
  assert Tensor([1, 2], dtype=dtypes.float16).dtype is dtypes.float16
  assert Tensor([1.7], dtype="int8").dtype is dtypes.int8
  assert Tensor(b"\x00" * 8, dtype=dtypes.float32).shape == (2,)
  assert Tensor([1.0], dtype=dtypes.bfloat16).dtype is dtypes.bfloat16
  assert Tensor(1, device="python").device == "PYTHON"

def test_numpy_input():
  np = pytest.importorskip("numpy")
  assert Tensor(np.zeros((2, 3), np.int64)).dtype is dtypes.int64
  assert Tensor(np.float32(2.0)).shape == () and Tensor(np.float32(2.0)).dtype is dtypes.float32
  assert Tensor(np.ones(3), dtype=dtypes.float16).dtype is dtypes.float16
  with pytest.raises(TypeError, match="complex"): Tensor(np.zeros(2, np.complex64))

def test_fill_creators():
  assert Tensor.zeros(2, 3).shape == (2, 3) and Tensor.zeros((2, 3)).dtype is dtypes.float32
  assert Tensor.ones(4, dtype=dtypes.int8).dtype is dtypes.int8
  assert Tensor.full((2,), 7).dtype is dtypes.int32 and Tensor.full((2,), True).dtype is dtypes.bool and Tensor.full(3, 1.5).shape == (3,)
  assert Tensor.empty(3, 2, dtype=dtypes.uint16).shape == (3, 2) and Tensor.empty(3).uop.base.op is Ops.BUFFER
  t = Tensor.empty(2, 5, dtype=dtypes.int16)
  assert t.zeros_like().dtype is dtypes.int16 and t.ones_like(dtype=dtypes.float32).dtype is dtypes.float32 and t.full_like(3).shape == (2, 5)
  assert t.rand_like(dtype=dtypes.float16).shape == (2, 5)

@pytest.mark.parametrize("args, n, dtype", [((5,), 5, dtypes.int32), ((2, 9), 7, dtypes.int32), ((9, 2, -2), 4, dtypes.int32),
  ((0, 1, 0.25), 4, dtypes.float32), ((3, 3), 0, dtypes.int32), ((5, 0), 0, dtypes.int32), ((0.0, 1.0, 0.3), 4, dtypes.float32)])
def test_arange_shape(args, n, dtype):
  t = Tensor.arange(*args)
  assert t.shape == (n,) and t.dtype is dtype

def test_other_creators():
  assert Tensor.eye(3).shape == (3, 3) and Tensor.eye(2, 5, dtype=dtypes.bool).dtype is dtypes.bool
  assert Tensor.linspace(0, 1, 5).shape == (5,) and Tensor.linspace(0, 1, 0).shape == (0,)
  assert Tensor.rand(2, 3).shape == (2, 3) and Tensor.rand(2, 3).dtype is dtypes.float32
  assert Tensor.randn(4, dtype=dtypes.float16).dtype is dtypes.float16
  assert Tensor.randint(2, 2, low=1, high=3).dtype is dtypes.int32 and Tensor.uniform(3, low=-1, high=1).shape == (3,)
  with pytest.raises(TypeError, match="randint"): Tensor.rand(3, dtype=dtypes.int32)
  with pytest.raises(ValueError, match="step"): Tensor.arange(0, 5, 0)

def test_rand_key_is_an_input():
  # seed and call number live in a small key buffer, not in constants: every call builds the same graph over another buffer,
  # so one compiled kernel serves every seed and every call
  Tensor.manual_seed(42)
  a, b = Tensor.rand(3), Tensor.rand(3)
  (ka,), (kb,) = ([u for u in t.uop.toposort() if u.op is Ops.BUFFER] for t in (a, b))
  assert ka is not kb and a.uop.substitute({ka: kb}) is b.uop
  assert ka.dtype is dtypes.uint32 and ka.arg.shape == (2,)
  assert not any(u.op is Ops.CONST and u.arg == 42 for u in a.uop.toposort())

# *** dtype promotion ***

def i32(*s): return Tensor.empty(*s, dtype=dtypes.int32)
def t_(dt): return Tensor.empty(2, dtype=dt)

@pytest.mark.parametrize("fn, dtype", [
  (lambda: i32(2) + 2, dtypes.int32), (lambda: i32(2) * 2.5, dtypes.float32), (lambda: 2 - i32(2), dtypes.int32),
  (lambda: t_(dtypes.int8) + t_(dtypes.int16), dtypes.int16), (lambda: t_(dtypes.uint8) + t_(dtypes.int8), dtypes.int16),
  (lambda: t_(dtypes.float16) + t_(dtypes.float32), dtypes.float32), (lambda: t_(dtypes.float16) * 3.0, dtypes.float16),
  (lambda: t_(dtypes.bool) + 1, dtypes.int32), (lambda: t_(dtypes.int32) + t_(dtypes.float16), dtypes.float16),
  (lambda: i32(2) / 2, dtypes.float32), (lambda: i32(2) // 2, dtypes.int32), (lambda: i32(2) < 1.5, dtypes.bool),
  (lambda: i32(2) == i32(2), dtypes.bool), (lambda: (i32(2) > 0).where(1, 2), dtypes.int32), (lambda: (i32(2) > 0).where(1.0, 2), dtypes.float32),
  (lambda: (i32(2) > 0).where(i32(2), 0.5), dtypes.float32), (lambda: t_(dtypes.int8).sum(), dtypes.int32),
  (lambda: t_(dtypes.uint8).sum(), dtypes.uint32), (lambda: t_(dtypes.bool).sum(), dtypes.int32), (lambda: t_(dtypes.float16).sum(), dtypes.float16),
  (lambda: i32(2).mean(), dtypes.float32), (lambda: t_(dtypes.float16).mean(), dtypes.float16), (lambda: i32(2).max(), dtypes.int32),
  (lambda: i32(2).argmax(), dtypes.int32), (lambda: i32(2).exp(), dtypes.float32), (lambda: t_(dtypes.int8) @ t_(dtypes.int8), dtypes.int8),
  (lambda: t_(dtypes.float16) @ t_(dtypes.float16), dtypes.float16), (lambda: i32(2).cat(t_(dtypes.float32)), dtypes.float32),
  (lambda: i32(2).softmax(), dtypes.float32), (lambda: t_(dtypes.uint8) & 1, dtypes.uint8), (lambda: ~t_(dtypes.uint32), dtypes.uint32)])
def test_promotion(fn, dtype):
  assert fn().dtype is dtype

# *** shapes ***

@pytest.mark.parametrize("fn, shape", [
  (lambda t: t.reshape(4, 6), (4, 6)), (lambda t: t.reshape(-1), (24,)), (lambda t: t.permute(2, 0, 1), (4, 2, 3)), (lambda t: t.T, (4, 3, 2)),
  (lambda t: t[:, None].expand(2, 5, 3, 4), (2, 5, 3, 4)), (lambda t: t.pad((1, 2)), (2, 3, 7)), (lambda t: t.pad(((1, 1), None, (0, 3))), (4, 3, 7)),
  (lambda t: t.pad((-1, 0, 1, 1)), (2, 5, 3)), (lambda t: t.shrink(((0, 1), (1, 3), None)), (1, 2, 4)), (lambda t: t.flip(1), (2, 3, 4)),
  (lambda t: t[0], (3, 4)), (lambda t: t[..., 1], (2, 3)), (lambda t: t[:, ::2, None], (2, 2, 1, 4)), (lambda t: t[::-1, 5:], (2, 0, 4)),
  (lambda t: t[None, ..., None], (1, 2, 3, 4, 1)), (lambda t: t[1, -1, ::3], (2,)), (lambda t: t.sum(), ()), (lambda t: t.sum(1), (2, 4)),
  (lambda t: t.max((0, 2), keepdim=True), (1, 3, 1)), (lambda t: t.mean(-1), (2, 3)), (lambda t: t.argmax(1, keepdim=True), (2, 1, 4)),
  (lambda t: t.argmin(), ()), (lambda t: t.softmax(0), (2, 3, 4)), (lambda t: t.logsumexp(1), (2, 4)), (lambda t: t.cumsum(2), (2, 3, 4)),
  (lambda t: t @ Tensor.empty(4, 5), (2, 3, 5)), (lambda t: Tensor.empty(7, 1, 5, 2) @ Tensor.empty(3, 2, 6), (7, 3, 5, 6)),
  (lambda t: Tensor.empty(3) @ t, (2, 4)), (lambda t: t @ Tensor.empty(4), (2, 3)), (lambda t: Tensor.empty(4) @ Tensor.empty(4), ()),
  (lambda t: t.cat(t, dim=1), (2, 6, 4)), (lambda t: t.stack(t, t), (3, 2, 3, 4)), (lambda t: t.stack(t, dim=-1), (2, 3, 4, 2)),
  (lambda t: t + Tensor.empty(3, 1), (2, 3, 4)), (lambda t: t.flatten(1), (2, 12)), (lambda t: t.unsqueeze(-1), (2, 3, 4, 1)),
  (lambda t: t.repeat(2, 1, 1), (4, 3, 4)), (lambda t: t.var(2), (2, 3)), (lambda t: t.any(0), (3, 4))])
def test_shapes(fn, shape):
  assert fn(Tensor.empty(2, 3, 4)).shape == shape

_slices = st.builds(slice, st.none() | st.integers(-7, 7), st.none() | st.integers(-7, 7), st.none() | st.integers(-4, 4).filter(bool))

@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=4), st.lists(_slices | st.integers(-6, 6) | st.sampled_from([None, Ellipsis]), max_size=5))
def test_getitem_shape_like_numpy(shape, idx):
  np = pytest.importorskip("numpy")
  want, idx = np.empty(shape), tuple(idx)
  try: want_shape = want[idx].shape
  except IndexError:
    with pytest.raises(IndexError): Tensor.empty(*shape)[idx]
    return
  assert Tensor.empty(*shape)[idx].shape == want_shape

def test_broadcast_is_implicit():
  # ALU ops broadcast numpy style without inserting EXPAND nodes
  r = Tensor.empty(3, 1) + Tensor.empty(4)
  assert r.shape == (3, 4) and r.uop.op is Ops.ADD and all(s.op is not Ops.EXPAND for s in r.uop.src)

def test_properties():
  t = Tensor.empty(2, 3, dtype=dtypes.int16)
  assert (t.numel(), t.element_size(), t.nbytes(), t.ndim, t.size(), t.size(-1), len(t)) == (6, 2, 12, 2, (2, 3), 3, 2)
  assert "(2, 3)" in repr(t) and "short" in repr(t) and t.device in repr(t)
  assert len(list(t)) == 2 and list(t)[0].shape == (3,)
  t2 = Tensor.empty(2, 3, requires_grad=True)
  assert t2.requires_grad is True and t2.detach().shape == (2, 3) and t2.contiguous().uop.op is Ops.CONTIGUOUS
  assert len({t, t2, t}) == 2  # hashed by identity even though == is elementwise
  assert isinstance(t == t2, Tensor) and (t == 1).dtype is dtypes.bool
  assert t.to(t.device) is t and t.to("PYTHON" if t.device != "PYTHON" else "CPU").uop.op is Ops.COPY

def test_custom_kernel_graph():
  def kernel(out:UOp, a:UOp) -> UOp:
    r = UOp.range(a.shape[0], 0)
    return out[r].store(a[r].load() * 2).end(r).sink(arg=KernelInfo(name="double"))
  out, a = Tensor.custom_kernel(Tensor.empty(4), Tensor.empty(4), fxn=kernel)
  assert out.shape == (4,) and out.uop.op is Ops.AFTER and out.uop.src[1].op is Ops.CALL and a.uop.src[1] is out.uop.src[1]

# *** errors ***

def test_errors():
  t = Tensor.empty(2, 3)
  with pytest.raises(ValueError, match="ragged"): Tensor([[1, 2], [3]])
  with pytest.raises(ValueError, match=r"item 1 has shape \(\)"): Tensor([[1, 2], 3])
  with pytest.raises(TypeError, match="can't make a Tensor from dict"): Tensor({})
  with pytest.raises(TypeError, match="str"): Tensor(["a"])
  with pytest.raises(ValueError, match=r"cannot reshape shape \(2, 3\)"): t.reshape(4, 2)
  with pytest.raises(ValueError, match="only one -1"): t.reshape(-1, -1)
  with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2,\) cannot be broadcast"): t + Tensor.empty(2)
  with pytest.raises(ValueError, match="cannot expand"): t.expand(4, 3)
  with pytest.raises(RuntimeError, match="don't fit"): t @ Tensor.empty(2, 3)
  with pytest.raises(RuntimeError, match="at least 1 dim"): t @ Tensor(1.0)
  with pytest.raises(ValueError, match=r"shape \(2, 3\) \(6 elements\)"): t.item()
  with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"): t[0, 3]
  with pytest.raises(IndexError, match="too many indices"): t[0, 0, 0]
  with pytest.raises(IndexError, match="single ellipsis"): t[..., ...]
  with pytest.raises(TypeError, match="not supported"): t[1.5]
  with pytest.raises(ValueError, match="cat needs equal shapes"): t.cat(Tensor.empty(3, 3), dim=1)
  with pytest.raises(ValueError, match=r"last axis of shape \(2, 3\) is not a multiple of 2"): t.bitcast(dtypes.float64)
  with pytest.raises(TypeError, match="0-d"): len(Tensor(1.0))
  with pytest.raises(TypeError, match="ambiguous"): bool(t)
  with pytest.raises(RuntimeError, match="different devices"): Tensor.zeros(2, device="CPU") + Tensor.zeros(2, device="PYTHON")
  with pytest.raises(ValueError, match="same shape"): t.assign(Tensor.empty(3, 2))
  with pytest.raises(NotImplementedError, match="pad mode"): t.pad((1, 1), mode="mirror")
  with pytest.raises(ValueError, match="even length"): t.pad((1, 1, 1))

# *** the shared mixins on UOp ***

def test_uop_gets_the_mixins():
  x = UOp.const(dtypes.float32, 1.0, "CPU").reshape((1, 1)).expand((4, 6))
  assert x[1:3, ::-2].shape == (2, 3) and x[None, 0].shape == (1, 6)
  assert (x @ x.T).shape == (4, 4) and x.pad(((1, 0), (0, 2)), value=3.0).shape == (5, 8)
  assert x.cat(x, dim=1).shape == (4, 12) and x.stack(x).shape == (2, 4, 6)
  assert x.argmax(1).dtype is dtypes.int32 and x.mean().shape == () and x.softmax().shape == (4, 6) and x.cumsum(1).shape == (4, 6)
  assert x._arange(10).shape == (10,)

def test_int_list_overflow_is_an_error():
  import pytest
  from tinygrad import Tensor, dtypes
  with pytest.raises(OverflowError, match="int64"): Tensor([1, 2**40])
  with pytest.raises(OverflowError, match="300 does not fit in dtypes.uchar"): Tensor([300], dtype=dtypes.uint8)
  assert Tensor([2**40], dtype=dtypes.int64).tolist() == [2**40]
  assert Tensor([-1], dtype=dtypes.int8).tolist() == [-1]
  # Tensor.full too (it wrapped: full((2,), 2**40) was [0, 0])
  with pytest.raises(OverflowError, match=r"1099511627776 does not fit in dtypes.int .*dtypes.int64"): Tensor.full((2,), 2**40)
  with pytest.raises(OverflowError, match="256 does not fit in dtypes.uchar"): Tensor.full((2,), 256, dtype=dtypes.uint8)
  assert Tensor.full((2,), 2**40, dtype=dtypes.int64).tolist() == [2**40] * 2 and Tensor.full((1,), 2**40, dtype=dtypes.float32).tolist() == [2.0**40]

def test_float_list_for_an_int_dtype_truncates_first():
  """as the cast and torch.tensor do: 255.5 is 255 in uint8, not an overflow; past the range after truncation it still is one"""
  import pytest
  from tinygrad import Tensor, dtypes
  assert Tensor([255.5, -0.5, 3.9], dtype=dtypes.uint8).tolist() == [255, 0, 3]
  assert Tensor([127.9, -128.7], dtype=dtypes.int8).tolist() == [127, -128]
  with pytest.raises(OverflowError, match="256.5 does not fit in dtypes.uchar"): Tensor([256.5], dtype=dtypes.uint8)
  with pytest.raises(OverflowError, match="nan does not fit"): Tensor([float("nan")], dtype=dtypes.int32)

def test_realize_retargets_other_tensors():
  # b was built on a before a was realized: afterwards b reads a's buffer instead of recomputing a
  from tinygrad.helpers import GlobalCounters
  from tinygrad.uop import Ops
  x = Tensor([1., 2., 3.])
  a = (x + 1).sum()
  b = a * 2
  a.realize()
  assert not any(u.op is Ops.REDUCE_AXIS for u in b.uop.toposort())
  GlobalCounters.reset()
  assert b.item() == 18.0 and GlobalCounters.kernel_count == 1

def test_in_place_custom_kernel_runs_once():
  from tinygrad.uop.ops import UOp, KernelInfo
  def increment(c:UOp) -> UOp: return c[0].store(c[0].load() + 1).sink(arg=KernelInfo(name="inc"))
  c = Tensor([5])
  out = Tensor.custom_kernel(c, fxn=increment)[0]
  view = out.reshape(1, 1)
  out.realize()
  assert view.tolist() == [[6]] and out.tolist() == [6]

def test_a_file_path_is_its_bytes(tmp_path):
  # tinygrad programs write Tensor(fetch(url)) or Tensor(pathlib.Path(...)): the file's bytes, uint8 unless dtype= says otherwise
  import struct
  (p := tmp_path / "w.bin").write_bytes(struct.pack("<3f", 1.5, -2.0, 4.25))
  assert Tensor(p).shape == (12,) and Tensor(p).dtype is dtypes.uint8
  assert Tensor(p, dtype=dtypes.float32).tolist() == [1.5, -2.0, 4.25]
  with pytest.raises(ValueError, match="12 bytes are not a whole number of dtypes.double elements"): Tensor(p, dtype=dtypes.float64)

def test_realize_takes_tinygrads_do_update_stats():
  from tinygrad import GlobalCounters
  a, b = Tensor([1.0, 2.0]) * 3, Tensor([4.0]) + 1
  k = GlobalCounters.kernel_count
  assert a.realize(b, do_update_stats=False) is a and a.tolist() == [3.0, 6.0] and b.tolist() == [5.0]
  assert GlobalCounters.kernel_count > k  # tg counts either way

def test_numpy_values_inside_lists():
  """numpy scalars and arrays inside a python list are the numbers and lists they hold (it raised "no dtype for python value of type
  float32"), as torch.tensor takes them"""
  t = Tensor([np.float32(1.5), 2])
  assert t.tolist() == [1.5, 2.0] and t.dtype is dtypes.default_float
  assert Tensor([np.array([1, 2]), np.array([3, 4])]).tolist() == [[1, 2], [3, 4]]
  assert Tensor([[np.int64(3), 4]]).dtype is dtypes.default_int and Tensor([np.bool_(True), False]).tolist() == [True, False]
  with pytest.raises(ValueError, match="ragged"): Tensor([np.array([1, 2]), np.array([3])])
