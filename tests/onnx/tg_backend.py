"""tinygrad as an onnx.backend.base.Backend, for the official backend test suite (test-only: needs the onnx package).
The runner computes float8/float4 in float32 and 2/4-bit ints in int8/uint8; outputs are handed over in the model's declared
type (through ml_dtypes, which onnx depends on) so the suite's dtype check compares like with like."""
import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep
from tinygrad.onnx import OnnxRunner

def _numpy(v, declared):
  if v is None: return None
  if isinstance(v, list): return [_numpy(x, declared.sequence_type.elem_type if declared is not None else None) for x in v]
  out = v.numpy()
  if declared is not None and declared.HasField("tensor_type") and declared.tensor_type.elem_type:
    want = onnx.helper.tensor_dtype_to_np_dtype(declared.tensor_type.elem_type)
    if out.dtype != want: out = out.astype(want)
  return out

def _input(v):
  """ml_dtypes arrays (float8, float4, int4, int2) in the type the runner computes them in"""
  if isinstance(v, list): return [_input(x) for x in v]
  if isinstance(v, np.ndarray) and v.dtype.type.__module__.startswith("ml_dtypes") and v.dtype.name != "bfloat16":
    return v.astype(np.float32 if "float" in v.dtype.name else np.uint8 if v.dtype.name.startswith("uint") else np.int8)
  return v

class TinygradRep(BackendRep):
  def __init__(self, model:onnx.ModelProto, device:str|None):
    self.runner = OnnxRunner(model.SerializeToString(), device=device)
    self.declared = [o.type for o in model.graph.output]
  def run(self, inputs, **kwargs):
    if isinstance(inputs, dict): feeds = inputs
    else: feeds = dict(zip(self.runner.graph.inputs, inputs if isinstance(inputs, (list, tuple)) else [inputs]))
    feeds = {k: _input(v) for k, v in feeds.items()}
    outs = self.runner(feeds)
    return tuple(_numpy(v, d) for v, d in zip(outs.values(), self.declared))

class TinygradBackend(Backend):
  @classmethod
  def is_compatible(cls, model, device="CPU", **kwargs): return True
  @classmethod
  def prepare(cls, model, device="CPU", **kwargs): return TinygradRep(model, None)
  @classmethod
  def supports_device(cls, device): return device == "CPU"

def node_test_case():
  """the suite's node tests as one unittest.TestCase class; methods are test_<name>_cpu"""
  import onnx.backend.test
  return onnx.backend.test.BackendTest(TinygradBackend, __name__).test_cases["OnnxBackendNodeModelTest"]
