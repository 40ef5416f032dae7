"""A pickle reader for torch checkpoints that runs no code: only the globals a tensor archive names are found, each mapped to a
stand-in that records what to build, or to a function that checks its arguments and builds a plain value (bytes, a set, a tuple for
torch.Size); any other global is a FormatError naming it. The globals are those torch.load(weights_only=True) allows, less the ones
for tensor subclasses and quantized tensors."""
from __future__ import annotations
import collections, dataclasses, io, pickle, pickletools
from dataclasses import dataclass
from typing import Callable
from tinygrad.dtype import DType, dtypes
from tinygrad.nn.binary import FormatError, shape_problem

STORAGE_DTYPES: dict[str, DType] = {"DoubleStorage": dtypes.float64, "FloatStorage": dtypes.float32, "HalfStorage": dtypes.float16,
  "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
  "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool}
# torch's storages of complex tensors, by the dtype they hold: a checkpoint may well need one, but tinygrad has no complex dtype
COMPLEX_STORAGES = {"ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128"}
# torch's dtypes by the name pickle gives them (the global torch.float32), with the tinygrad dtype where there is one
TORCH_DTYPES: dict[str, DType|None] = {"float64": dtypes.float64, "float32": dtypes.float32, "float16": dtypes.float16,
  "bfloat16": dtypes.bfloat16, "int64": dtypes.int64, "int32": dtypes.int32, "int16": dtypes.int16, "int8": dtypes.int8, "uint8": dtypes.uint8,
  "bool": dtypes.bool, "uint16": dtypes.uint16, "uint32": dtypes.uint32, "uint64": dtypes.uint64, "float8_e4m3fn": dtypes.fp8e4m3,
  "float8_e5m2": dtypes.fp8e5m2, **{k: None for k in ("complex32", "complex64", "complex128", "quint8", "qint8", "qint32", "quint4x2",
  "quint2x4", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
  *(f"{u}int{n}" for u in ("", "u") for n in range(1, 8)))}}

def _sealed(cls):
  """frozen with slots, and pickle's BUILD opcode (which calls __setstate__) refused: dataclasses gives a frozen slots class a
  __setstate__ that rewrites every field, which would undo the checks made when the object was built"""
  cls = dataclass(frozen=True, slots=True)(cls)
  def __setstate__(self, state): raise FormatError(f"the pickle sets the state of a {cls.__name__} (BUILD), which torch never writes")
  cls.__setstate__ = __setstate__
  return cls

@_sealed
class StorageType:
  dtype: DType

@_sealed
class TensorType:
  """a torch tensor class (torch.FloatTensor): the tar format names one beside each tensor, and nothing reads it"""
  dtype: DType

@_sealed
class TorchDType:
  """a torch dtype object, loaded as its tinygrad dtype or, where tinygrad has none, its name ("torch.complex64"); a stand-in while
  unpickling because BUILD on a DType itself would rewrite that dtype for the whole program"""
  name: str
  dtype: DType|None
  def value(self) -> DType|str: return self.dtype if self.dtype is not None else f"torch.{self.name}"

@_sealed
class Storage:
  """elements [offset, offset+numel) of the storage stored under `key` (a legacy view's offset is > 0); its bytes are read after the
  pickle (a zip entry, or what follows it)"""
  key: str
  dtype: DType
  numel: int
  offset: int = 0

@_sealed
class TensorRef:
  """a tensor to build once every storage's bytes are known: storage[offset + sum(i_k * stride_k)] for each index i of size"""
  storage: Storage
  offset: int
  size: tuple
  stride: tuple

@_sealed
class Global:
  """a global the pickle may call: an instance, so BUILD can't reach the loader's own function and rewrite its attributes"""
  fn: Callable
  def __call__(self, *args): return self.fn(*args)

_STAND_INS = (StorageType, TensorType, TorchDType, Storage, TensorRef, Global)
_BRACKETS = {tuple: ("(", ")"), list: ("[", "]"), set: ("{", "}"), frozenset: ("frozenset({", "})"), dict: ("{", "}"),
             collections.OrderedDict: ("OrderedDict({", "})")}
REPR_LIMIT = 200

def _scalar_repr(x, limit:int) -> str:
  """the repr of what bounded_repr does not walk into; an object of another type is named by its type"""
  # str() of a huge int takes time quadratic in its digits, and fails past 4300 of them
  if type(x) is int: return repr(x) if x.bit_length() <= 64 else f"<{x.bit_length()}-bit int>"
  if type(x) in (str, bytes, bytearray): return repr(x[:limit])
  if x is None or type(x) in (bool, float, complex) or isinstance(x, DType): return repr(x)
  return f"<{type(x).__name__}>"

def bounded_repr(obj, limit:int=REPR_LIMIT) -> str:
  """obj's repr for an error message, built only as far as `limit` characters: a pickle's objects are untrusted, and the full repr
  of a chain of shared tuples (each holding the one below twice) takes time exponential in the chain's length"""
  parts: list[str] = []
  size = 0
  def put(text:str):
    nonlocal size
    parts.append(text)
    size += len(text)
  def put_items(items, pairs:bool):
    for i, item in enumerate(items):
      if size > limit: return
      if i: put(", ")
      if pairs:
        walk(item[0])
        put(": ")
      walk(item[1] if pairs else item)
  def walk(x):
    if size > limit: return  # each level puts at least one character first, so this also bounds the recursion
    if type(x) in _BRACKETS:
      opening, closing = _BRACKETS[type(x)]
      put(opening)
      put_items(x.items() if isinstance(x, dict) else x, isinstance(x, dict))
      put(("," if type(x) is tuple and len(x) == 1 else "") + closing)
    elif type(x) in _STAND_INS:
      put(type(x).__name__ + "(")
      put_items((getattr(x, f.name) for f in dataclasses.fields(x)), False)
      put(")")
    else: put(_scalar_repr(x, limit))
  walk(obj)
  text = "".join(parts)
  return text if len(text) <= limit else text[:limit] + "..."

def check_view(storage:Storage, offset:int, size:tuple, stride:tuple):
  """every element the view reads lies inside its storage"""
  if 0 not in size and (last := offset + sum((s - 1) * st for s, st in zip(size, stride))) >= storage.numel:
    raise FormatError(f"tensor of size {size}, stride {stride}, offset {offset} reads element {last} of storage {bounded_repr(storage.key)}, "
                      f"which has {storage.numel}")

def tensor_ref(storage, offset, size, stride, rebuild:str="_rebuild_tensor") -> TensorRef:
  """a TensorRef, once its fields are checked; rebuild names what built it, for the message"""
  if not isinstance(storage, Storage): raise FormatError(f"{rebuild} got {type(storage).__name__} where a storage belongs")
  if not (type(offset) is int and type(size) is tuple and type(stride) is tuple and len(size) == len(stride)
          and all(type(x) is int and x >= 0 for x in (offset,) + size + stride)):
    raise FormatError(f"{rebuild} needs an int offset and equally long size and stride tuples of ints >= 0, "
                      f"got {bounded_repr(offset)}, {bounded_repr(size)}, {bounded_repr(stride)}")
  if problem := shape_problem(size): raise FormatError(f"{rebuild}: the size {problem}")
  check_view(storage, offset, size, stride)
  return TensorRef(storage, offset, size, stride)

# torch's rebuild functions: v1 (old checkpoints), v2 (adds requires_grad, hooks, metadata, none of which a Tensor keeps), and v3 for
# the dtypes torch has no typed storage for (uint16/32/64, float8): their storage is untyped bytes and the dtype comes last
def _rebuild_tensor(storage, offset, size, stride) -> TensorRef: return tensor_ref(storage, offset, size, stride)
def _rebuild_tensor_v2(storage, offset, size, stride, *_) -> TensorRef: return tensor_ref(storage, offset, size, stride, "_rebuild_tensor_v2")

def _rebuild_tensor_v3(storage, offset, size, stride, _requires_grad, _hooks, dtype, *_) -> TensorRef:
  if not isinstance(dtype, TorchDType) or dtype.dtype is None:
    raise FormatError(f"_rebuild_tensor_v3 got dtype {dtype.value() if isinstance(dtype, TorchDType) else type(dtype).__name__}, "
                      "which tinygrad has no dtype for")
  if not isinstance(storage, Storage) or storage.dtype is not dtypes.uint8 or storage.offset or storage.numel % dtype.dtype.itemsize:
    raise FormatError(f"_rebuild_tensor_v3 needs a whole untyped storage of a multiple of {dtype.dtype.itemsize} bytes for {dtype.dtype}")
  typed = Storage(storage.key, dtype.dtype, storage.numel // dtype.dtype.itemsize)
  return tensor_ref(typed, offset, size, stride, "_rebuild_tensor_v3")

def _rebuild_parameter(data, *_):
  if not isinstance(data, TensorRef): raise FormatError(f"_rebuild_parameter got {type(data).__name__} where a tensor belongs")
  return data

def _encode(text, encoding) -> bytes:
  """_codecs.encode: how pickle protocol 2 writes bytes, as their latin-1 text"""
  if type(text) is not str or encoding not in ("latin1", "latin-1"):
    raise FormatError(f"_codecs.encode of a {type(text).__name__} in {bounded_repr(encoding, 30)}: only str text in latin1 makes bytes")
  return text.encode("latin1")

def _copy_of(kind:type, sources:tuple) -> Global:
  """kind() or kind(x) for x of one of `sources`: bytes(n) or bytearray(n) would allocate n bytes, so only values already in the
  pickle are copied"""
  def make(*args):
    if len(args) > 1 or any(type(a) not in sources for a in args):
      raise FormatError(f"{kind.__name__}() of {', '.join(type(a).__name__ for a in args)}: only {kind.__name__}() of "
                        f"{' or '.join(t.__name__ for t in sources)} is loaded")
    return kind(*args)
  return Global(make)

def _complex(real=0.0, imag=0.0) -> complex:
  if not all(type(x) in (int, float) for x in (real, imag)): raise FormatError("complex() is loaded from two numbers only")
  return complex(real, imag)

def _size(dims) -> tuple:
  """torch.Size, loaded as a tuple"""
  if type(dims) not in (tuple, list) or not all(type(d) is int for d in dims): raise FormatError("torch.Size() is loaded from ints only")
  return tuple(dims)

def _device(kind, index=None) -> str:
  """torch.device, loaded as its name ("cuda:0")"""
  if type(kind) is not str or not (index is None or type(index) is int): raise FormatError("torch.device() is loaded from a str and an int only")
  return kind if index is None else f"{kind}:{index}"

_CONTAINERS = (list, tuple, set, frozenset)
# python 2's module name: a protocol 2 pickle names it, and only pickle's own find_class maps it to builtins
_BUILTINS = {"set": _copy_of(set, _CONTAINERS), "frozenset": _copy_of(frozenset, _CONTAINERS), "bytes": _copy_of(bytes, (bytes,)),
             "bytearray": _copy_of(bytearray, (bytes, bytearray)), "complex": Global(_complex)}

# OrderedDict is the class itself: BUILD on it fails (a builtin type is immutable); on an instance it sets attributes such as a
# state dict's _metadata, which is what torch writes
ALLOWED = {("torch._utils", "_rebuild_tensor"): Global(_rebuild_tensor), ("torch._utils", "_rebuild_tensor_v2"): Global(_rebuild_tensor_v2),
           ("torch._utils", "_rebuild_tensor_v3"): Global(_rebuild_tensor_v3), ("torch._utils", "_rebuild_parameter"): Global(_rebuild_parameter),
           ("collections", "OrderedDict"): collections.OrderedDict, ("_codecs", "encode"): Global(_encode),
           ("torch", "Size"): Global(_size), ("torch", "device"): Global(_device), ("torch.storage", "UntypedStorage"): StorageType(dtypes.uint8),
           **{("torch", k): StorageType(v) for k, v in STORAGE_DTYPES.items()},
           **{("torch", k.replace("Storage", "Tensor")): TensorType(v) for k, v in STORAGE_DTYPES.items()},
           **{("torch", k): TorchDType(k, v) for k, v in TORCH_DTYPES.items()},
           **{(module, k): v for module in ("builtins", "__builtin__") for k, v in _BUILTINS.items()}}

def tar_key(k) -> str|None:
  """the tar format keys storages and tensors by an int or a str, and its pickle names them either way ("7" for 7): the key as a
  str, or None for anything else"""
  return str(k) if type(k) is str or (type(k) is int and abs(k) < 1 << 63) else None

class _Unpickler(pickle.Unpickler):
  def __init__(self, f, storages:dict[str, Storage], objects:dict|None):
    super().__init__(f)
    self.storages, self.views, self.objects = storages, {}, objects
  def find_class(self, module:str, name:str):
    if module == "torch" and name in COMPLEX_STORAGES:
      raise FormatError(f"the pickle names torch.{name}, the storage of a {COMPLEX_STORAGES[name]} tensor: tinygrad does not support "
                        "complex dtypes")
    if (hit := ALLOWED.get((module, name))) is None:
      raise FormatError(f"the pickle names the global {module}.{name}, which a tensor archive never needs; refusing to load it")
    return hit
  def persistent_load(self, pid):
    if self.objects is not None: return self._tar_object(pid)
    # ('storage', storage type, key, location, numel[, legacy view metadata (view key, element offset, numel) or None])
    if not (type(pid) is tuple and len(pid) in (5, 6) and pid[0] == "storage" and isinstance(pid[1], StorageType) and type(pid[2]) is str
            and type(pid[4]) is int and pid[4] >= 0):
      raise FormatError(f"persistent id {bounded_repr(pid)} is not ('storage', <torch.*Storage>, key, location, numel[, view])")
    st = self.storages.setdefault(pid[2], Storage(pid[2], pid[1].dtype, pid[4]))
    if (st.dtype, st.numel) != (pid[1].dtype, pid[4]):
      raise FormatError(f"storage {bounded_repr(pid[2])} is named as {st.numel} {st.dtype} and as {pid[4]} {pid[1].dtype}")
    return st if len(pid) == 5 or pid[5] is None else self._view(st, pid[5])
  def _view(self, st:Storage, meta) -> Storage:
    """torch's legacy loader: a view is elements [offset, offset+numel) of its root storage, the same every time its key is named"""
    if not (type(meta) is tuple and len(meta) == 3 and type(meta[0]) is str and all(type(x) is int and x >= 0 for x in meta[1:])):
      raise FormatError(f"storage {bounded_repr(st.key)} has view metadata {bounded_repr(meta, 100)}, not (view key, element offset, element count)")
    key, offset, numel = meta
    if offset + numel > st.numel:
      raise FormatError(f"storage view {bounded_repr(key)} spans elements [{offset}, {offset+numel}) of storage {bounded_repr(st.key)}, "
                        f"which has {st.numel}")
    view = self.views.setdefault(key, Storage(st.key, st.dtype, numel, offset))
    if view != Storage(st.key, st.dtype, numel, offset): raise FormatError(f"storage view {bounded_repr(key)} is named as two different views")
    return view
  def _tar_object(self, pid):
    """the tar format: a persistent id is the key of a storage or tensor its other members declared"""
    if (obj := self.objects.get(tar_key(pid))) is None:
      raise FormatError(f"persistent id of type {type(pid).__name__} names no storage or tensor of the archive")
    return obj

MEMO_OPS = ("PUT", "BINPUT", "LONG_BINPUT")
GET_OPS = ("GET", "BINGET", "LONG_BINGET")
# deeper than any checkpoint nests (a module tree is tens deep). Python hashes a nested tuple or frozenset (a dict key, a set member)
# recursively in C with no limit: 200000 TUPLE1s in a 400 KB file are a crash, not an exception
MAX_NESTING = 1000
# how many objects hashing may visit over the whole pickle: a floor, plus an allowance per opcode. Hashing a tuple visits all of it,
# each shared reference again, so a chain of tuples that each hold the one below twice costs 2**length visits; a checkpoint's keys
# and arguments (state dicts, optimizer state, parameters) come to about one visit per opcode
MAX_HASHED, HASHED_PER_OPCODE = 1 << 20, 16
# ops that change the object below their operands in place and push it back: a memo entry for that object sees the change
MUTATING_OPS = {"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"}
# a list appended to itself doubles its modeled size each time: capped, so that the count stays a small int
SIZE_CAP = 1 << 62

# opcode -> (whether it takes the items down to a mark, how many items it takes below them, what it pushes: True an object, False a mark)
_STACK_EFFECT = {op.name: (pickletools.markobject in op.stack_before,
                           op.stack_before.index(pickletools.markobject) if pickletools.markobject in op.stack_before else len(op.stack_before),
                           tuple(kind is not pickletools.markobject for kind in op.stack_after)) for op in pickletools.opcodes}

@dataclass(slots=True)
class _Node:
  """the prescan's model of one object: how deeply it nests, and how many objects it holds with every shared reference expanded"""
  depth: int
  size: int

def _pop_to_mark(stack:list) -> list:
  """the items above the topmost mark, in stack order; the mark is popped too"""
  above = []
  while (item := stack.pop()) is not None: above.append(item)
  return above[::-1]

def _hashed(name:str, above:list, below:list) -> list:
  """what an op hashes, of the items it takes (those above a mark in stack order, then those below it, top first): dict keys, set
  members, and what it hands a loaded global or BUILD, which may hash it (set(), frozenset(), OrderedDict(), a state dict's keys)"""
  if name in ("SETITEMS", "DICT"): return above[::2]
  if name in ("ADDITEMS", "FROZENSET", "OBJ", "INST"): return above
  if name == "SETITEM": return below[1:2]
  if name in ("REDUCE", "NEWOBJ", "NEWOBJ_EX", "BUILD"): return below[:-1]
  return []

def _result(name:str, operands:list) -> _Node:
  """what an op pushes, given all it takes (the object below the mark last): that object grown in place, or a new one holding it all"""
  target, parts = (operands[-1], operands[:-1]) if name in MUTATING_OPS else (_Node(1, 1), operands)
  for n in parts: target.depth, target.size = max(target.depth, n.depth + 1), target.size + n.size  # a mark taken as an object: None.depth
  target.size = min(target.size, SIZE_CAP)
  return target

def _prescan(f:io.BytesIO):
  """walk the opcodes without building anything: a length that runs past the end, a memo index past the number of opcodes so far
  (the C unpickler sizes its memo to twice the index), objects nested past MAX_NESTING, or hashing that would visit more objects than
  MAX_HASHED and HASHED_PER_OPCODE allow fail here before any of it is built. They are followed on a model of pickle's stack: a
  _Node per object, the same one in the memo, and a mark as None"""
  size, stack, memo, hashed = len(f.getbuffer()), [], {}, 0
  try:
    for count, (op, arg, pos) in enumerate(pickletools.genops(f)):
      if op.name == "FRAME" and arg > size - f.tell(): raise ValueError(f"FRAME of {arg} bytes at offset {pos} runs past the end")
      if op.name in MEMO_OPS and arg > count: raise ValueError(f"{op.name} at offset {pos} stores memo index {arg} after only {count} opcodes")
      if op.name in MEMO_OPS or op.name == "MEMOIZE": memo[arg if op.name in MEMO_OPS else len(memo)] = stack[-1]
      elif op.name in GET_OPS: stack.append(memo[arg])
      else:
        to_mark, below_count, pushes = _STACK_EFFECT[op.name]
        if not (to_mark or below_count):  # most ops push a constant, a global, an empty container or a mark: a leaf
          stack.extend(_Node(1, 1) if kind else None for kind in pushes)
          continue
        above = _pop_to_mark(stack) if to_mark else []
        below = [stack.pop() for _ in range(below_count)]
        if hashes := _hashed(op.name, above, below):
          hashed += sum(n.size for n in hashes)
          if hashed > (budget := MAX_HASHED + HASHED_PER_OPCODE * count):
            raise ValueError(f"{op.name} at offset {pos} hashes objects that expand, through shared references, to {hashed} in all, "
                             f"past the {budget} allowed after {count} opcodes")
        if (node := _result(op.name, above + below)).depth > MAX_NESTING:
          raise ValueError(f"{op.name} at offset {pos} nests objects more than {MAX_NESTING} deep")
        stack.extend(node if kind else None for kind in pushes)
  except (IndexError, KeyError, AttributeError) as e:
    raise FormatError(f"bad pickle: its opcodes do not fit pickle's stack ({type(e).__name__})") from None
  except ValueError as e: raise FormatError(f"bad pickle: {e}") from None

def unpickle(f:io.BytesIO, name:str, storages:dict[str, Storage], objects:dict|None=None):
  """one pickle from f (which is left just after it); any malformation is a FormatError with the offset it was found at. Its storages
  are gathered into `storages`, or, given `objects` (the tar format), its persistent ids are keys of `objects`"""
  start = f.tell()
  try:
    _prescan(f)
    f.seek(start)
    return _Unpickler(f, storages, objects).load()
  except FormatError as e: raise FormatError(f"{name}: {e} (pickle starting at byte offset {start}, stream position {f.tell()})") from None
  except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as e:
    raise FormatError(f"{name}: bad pickle starting at byte offset {start}, failed near offset {f.tell()}: {type(e).__name__}: {e}") from None
