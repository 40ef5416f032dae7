"""FastEnum (Ops, AxisType) behaves like enum.Enum for everything the code base and users do with members, without enum's metaclass."""
import copy, enum, pickle
import pytest
from tinygrad.uop import Ops, AxisType, FastEnum

@pytest.mark.parametrize("cls", [Ops, AxisType])
def test_members_match_an_enum_built_from_the_same_names(cls):
  ref = enum.Enum("Ref", [m.name for m in cls])  # enum's functional API numbers from 1, in order: the oracle
  assert [(m.name, m.value) for m in cls] == [(r.name, r.value) for r in ref]
  assert len(cls) == len(ref) and list(cls.__members__) == list(ref.__members__)
  for m, r in zip(cls, ref):
    assert cls(r.value) is m and cls[r.name] is m and getattr(cls, r.name) is m and m in cls
    assert repr(m) == str(m) == f"{cls.__name__}.{r.name}" and f"{m:>30}" == f"{str(r).replace('Ref', cls.__name__):>30}"

def test_singletons_survive_pickle_and_copy():
  for m in (Ops.ADD, Ops.WHERE, AxisType.REDUCE):
    assert pickle.loads(pickle.dumps(m)) is m and copy.copy(m) is m and copy.deepcopy(m) is m
  assert pickle.loads(pickle.dumps({Ops.ADD: [AxisType.LOOP]})) == {Ops.ADD: [AxisType.LOOP]}

def test_order_hash_and_identity():
  assert sorted([Ops.MUL, Ops.CONST, Ops.ADD]) == [Ops.CONST, Ops.ADD, Ops.MUL]
  assert {Ops.ADD: 1}[Ops.ADD] == 1 and Ops.ADD != Ops.MUL and Ops.ADD not in AxisType and AxisType.LOOP not in Ops
  assert isinstance(Ops.ADD, FastEnum) and not isinstance(Ops.ADD, AxisType)

def test_mistakes_are_refused():
  with pytest.raises(ValueError, match="999 is not a valid Ops"): Ops(999)
  with pytest.raises(KeyError): Ops["NOT_AN_OP"]
  with pytest.raises(AttributeError, match="cannot reassign member Ops.ADD"): Ops.ADD = Ops.MUL
  with pytest.raises(AttributeError, match="immutable"): Ops.ADD.name = "SUB"
  assert Ops.ADD.name == "ADD" and Ops["ADD"] is Ops.ADD
