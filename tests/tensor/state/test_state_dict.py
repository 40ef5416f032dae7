from collections import OrderedDict, namedtuple
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn.state import get_state_dict, get_parameters, load_state_dict

class Lin:
  def __init__(self, i, o): self.weight, self.bias = Tensor.ones(o, i).contiguous(), Tensor.zeros(o).contiguous()
class Net:
  def __init__(self):
    self.layers = [Lin(2, 3), Lin(3, 1)]
    self.extra = {"scale": Tensor([2.0]), "pair": (Tensor([1.0]), 3)}
    self.od = OrderedDict(b=Tensor([5.0]))
    self.name = "net"

def test_names_follow_attributes_lists_dicts():
  assert list(get_state_dict(Net())) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "extra.scale", "extra.pair.0", "od.b"]
  assert list(get_state_dict(Lin(1, 1), prefix="enc.")) == ["enc.weight", "enc.bias"]
  assert list(get_state_dict(namedtuple("P", "x y")(Tensor([1]), Tensor([2])))) == ["x", "y"]

def test_parameters_shared_once_and_cycles_end():
  n = Net()
  n.tied = n.layers[0].weight
  n.parent = n  # a back-reference is not walked again
  ps = get_parameters(n)
  assert len(ps) == 7 and sum(p is n.layers[0].weight for p in ps) == 1
  assert "tied" in get_state_dict(n)

def test_load_writes_into_existing_buffers():
  n = Net()
  w = n.layers[0].weight.realize()  # a buffer: a lazy constant would get a private one at the write (equal constants are one node)
  view = w.reshape(6)
  sd = {k: Tensor.full(v.shape, 7.0) for k, v in get_state_dict(n).items()}
  load_state_dict(n, sd, verbose=False)
  assert n.layers[0].weight is w and view.tolist() == [7.0] * 6 and n.od["b"].tolist() == [7.0]

def test_strict_names_missing_and_shapes():
  n = Lin(2, 3)
  with pytest.raises(ValueError) as e: load_state_dict(n, {"weight": Tensor.zeros(3, 3), "other": Tensor.zeros(1)}, verbose=False)
  assert "missing keys: ['bias']" in str(e.value) and "(3, 2)" in str(e.value) and "(3, 3)" in str(e.value)

def test_strict_skips_keys_the_model_lacks_and_returns_the_loaded(capsys):
  # tinygrad 0.14's strict only asks that every model tensor be given: a checkpoint may carry more (optimizer state, another head)
  n = Lin(2, 1)
  ret = load_state_dict(n, {"weight": Tensor([[4.0, 5.0]]), "bias": Tensor([1.0]), "head.weight": Tensor.zeros(3)})
  assert ret[0] is n.weight and ret[1] is n.bias and len(ret) == 2
  assert n.weight.tolist() == [[4.0, 5.0]] and n.bias.tolist() == [1.0] and "unused ['head.weight']" in capsys.readouterr().out

def test_scalar_and_one_element_load_into_each_other():
  class M:
    def __init__(self): self.a, self.b = Tensor.zeros(1).contiguous().realize(), Tensor.zeros(()).contiguous().realize()
  m = M()
  load_state_dict(m, {"a": Tensor(3.0), "b": Tensor([4.0])}, verbose=False)
  assert m.a.shape == (1,) and m.a.tolist() == [3.0] and m.b.shape == () and m.b.item() == 4.0
  with pytest.raises(ValueError, match="mismatched"): load_state_dict(m, {"a": Tensor([1.0, 2.0]), "b": Tensor(1.0)}, verbose=False)

def test_not_strict_skips_missing_but_not_mismatches(capsys):
  n = Lin(2, 1)
  sd = {"weight": Tensor([[4.0, 5.0]]), "junk": Tensor([1])}
  load_state_dict(n, sd, strict=False, consume=True)
  assert n.weight.tolist() == [[4.0, 5.0]] and n.bias.tolist() == [0.0] and list(sd) == ["junk"]
  assert "skipped missing ['bias']" in capsys.readouterr().out
  with pytest.raises(ValueError, match=r"\(1, 2\).*\(2, 1\)"): load_state_dict(n, {"weight": Tensor([[1.0], [2.0]])}, strict=False, verbose=False)

def test_other_dtype_is_cast_to_the_models():
  # torch's load_state_dict copies into the existing parameter (a float16 checkpoint into a float32 model); upstream tinygrad also
  # accepts it. The model keeps its dtype and its buffer
  n = Lin(2, 1)
  buf = n.weight.realize().uop.base
  load_state_dict(n, {"weight": Tensor([[1.5, -2.25]], dtype=dtypes.half), "bias": Tensor([3])}, verbose=False)
  assert n.weight.dtype == dtypes.float32 and n.bias.dtype == dtypes.float32 and n.weight.uop.base is buf
  assert n.weight.tolist() == [[1.5, -2.25]] and n.bias.tolist() == [3.0]

def test_batchnorm_key_order_is_tinygrads():
  # programs zip state-dict keys or parameters with a checkpoint's: the order is tinygrad's, the counter before the statistics
  from tinygrad import nn
  assert list(get_state_dict(nn.BatchNorm2d(3))) == ["weight", "bias", "num_batches_tracked", "running_mean", "running_var"]
  assert [t.shape for t in get_parameters(nn.BatchNorm(2))] == [(2,), (2,), (), (2,), (2,)]

def test_model_holding_a_captured_tinyjit_a_class_and_a_module():
  """a model that keeps its jitted forward (examples like gpt2 do): once captured, the walk went from the kernels' buffers through the
  device and the compiler into sys.modules and failed on a namedtuple class (_asdict unbound)"""
  import collections, math
  from tinygrad import TinyJit
  class Model:
    def __init__(self):
      self.l1, self.kind, self.lib = Lin(4, 4), collections.namedtuple("K", "a"), math
      self.forward_jit = TinyJit(self.forward)
    def forward(self, x): return (x @ self.l1.weight.T + self.l1.bias).realize()
  m = Model()
  for _ in range(3): m.forward_jit(Tensor.ones(1, 4).contiguous().realize())
  assert list(get_state_dict(m)) == ["l1.weight", "l1.bias"] and len(get_parameters(m)) == 2
