"""Writes torch checkpoints without torch: stand-in classes whose module and name are torch's, pickled by python's own pickler."""
import io, pickle, struct, sys, types, zipfile
from collections import OrderedDict

class FakeTensor:
  """a tensor as torch pickles it: _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)"""
  def __init__(self, storage, offset, size, stride): self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
  def __reduce__(self): return (_rebuild_tensor_v2, (self.storage, self.offset, self.size, self.stride, False, OrderedDict()))

class FakeStorage:
  def __init__(self, kind:str, fmt:str, values:list): self.kind, self.fmt, self.values = kind, fmt, values
  def raw(self) -> bytes: return struct.pack(f"<{len(self.values)}{self.fmt}", *self.values)

def _rebuild_tensor_v2(*args): raise AssertionError("never called while writing")
_utils = types.ModuleType("torch._utils")
_utils._rebuild_tensor_v2, _rebuild_tensor_v2.__module__ = _rebuild_tensor_v2, "torch._utils"
_torch = types.ModuleType("torch")
STORAGE_CLASSES = {k: type(k, (), {"__module__": "torch"}) for k in ("FloatStorage", "DoubleStorage", "HalfStorage", "LongStorage", "IntStorage",
                                                                     "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage")}
for _k, _v in STORAGE_CLASSES.items(): setattr(_torch, _k, _v)

def _dump(obj, keys:dict, legacy:bool) -> bytes:
  class P(pickle.Pickler):
    def persistent_id(self, o):
      if not isinstance(o, FakeStorage): return None
      key = keys.setdefault(id(o), (str(len(keys)), o))[0]
      return ("storage", STORAGE_CLASSES[o.kind], key, "cpu", len(o.values)) + ((None,) if legacy else ())
  f = io.BytesIO()
  saved = {m: sys.modules.get(m) for m in ("torch", "torch._utils")}
  sys.modules.update({"torch": _torch, "torch._utils": _utils})
  try: P(f, protocol=2).dump(obj)
  finally:
    for m, v in saved.items():
      if v is None: sys.modules.pop(m)
      else: sys.modules[m] = v
  return f.getvalue()

def zip_checkpoint(obj, root:str="archive") -> bytes:
  keys: dict = {}
  pkl, f = _dump(obj, keys, legacy=False), io.BytesIO()
  with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
    z.writestr(f"{root}/data.pkl", pkl)
    for key, st in keys.values(): z.writestr(f"{root}/data/{key}", st.raw())
  return f.getvalue()

def legacy_checkpoint(obj) -> bytes:
  keys: dict = {}
  head = b"".join(pickle.dumps(x, protocol=2) for x in (0x1950a86a20f9469cfc6c, 1001, {"little_endian": True}))
  body = _dump(obj, keys, legacy=True)
  tail = pickle.dumps([k for k, _ in keys.values()], protocol=2)
  return head + body + tail + b"".join(struct.pack("<q", len(st.values)) + st.raw() for _, st in keys.values())
