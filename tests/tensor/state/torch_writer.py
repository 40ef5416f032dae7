"""Writes torch checkpoints without torch: stand-in classes whose module and name are torch's, pickled by python's own pickler."""
import io, pickle, struct, sys, types, zipfile
from collections import OrderedDict

class FakeTensor:
  """a tensor as torch pickles it: _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)"""
  def __init__(self, storage, offset, size, stride): self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
  def __reduce__(self): return (_rebuild_tensor_v2, (self.storage, self.offset, self.size, self.stride, False, OrderedDict()))

class FakeStorage:
  def __init__(self, kind:str, fmt:str, values:list): self.kind, self.fmt, self.values = kind, fmt, values
  def raw(self, order:str="<") -> bytes: return struct.pack(f"{order}{len(self.values)}{self.fmt}", *self.values)

class FakeView:
  """a legacy-format storage view: elements [offset, offset+numel) of root, named by its own key"""
  def __init__(self, root:FakeStorage, key:str, offset:int, numel:int): self.root, self.key, self.offset, self.numel = root, key, offset, numel

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
      view = (o.key, o.offset, o.numel) if isinstance(o, FakeView) else None
      if isinstance(o, FakeView): o = o.root
      if not isinstance(o, FakeStorage): return None
      key = keys.setdefault(id(o), (str(len(keys)), o))[0]
      return ("storage", STORAGE_CLASSES[o.kind], key, "cpu", len(o.values)) + ((view,) if legacy else ())
  f = io.BytesIO()
  saved = {m: sys.modules.get(m) for m in ("torch", "torch._utils")}
  sys.modules.update({"torch": _torch, "torch._utils": _utils})
  try: P(f, protocol=2).dump(obj)
  finally:
    for m, v in saved.items():
      if v is None: sys.modules.pop(m)
      else: sys.modules[m] = v
  return f.getvalue()

def zip_checkpoint(obj, root:str="archive", byteorder:str|None=None) -> bytes:
  """byteorder: write a <root>/byteorder entry ("little" or "big") and the storages in that order; None: no entry, little-endian"""
  keys: dict = {}
  pkl, f = _dump(obj, keys, legacy=False), io.BytesIO()
  with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
    z.writestr(f"{root}/data.pkl", pkl)
    if byteorder is not None: z.writestr(f"{root}/byteorder", byteorder)
    for key, st in keys.values(): z.writestr(f"{root}/data/{key}", st.raw(">" if byteorder == "big" else "<"))
  return f.getvalue()

def legacy_checkpoint(obj) -> bytes:
  keys: dict = {}
  head = b"".join(pickle.dumps(x, protocol=2) for x in (0x1950a86a20f9469cfc6c, 1001, {"little_endian": True}))
  body = _dump(obj, keys, legacy=True)
  tail = pickle.dumps([k for k, _ in keys.values()], protocol=2)
  return head + body + tail + b"".join(struct.pack("<q", len(st.values)) + st.raw() for _, st in keys.values())
