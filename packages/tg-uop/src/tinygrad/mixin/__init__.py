"""Tensor-style methods shared by UOp and Tensor, so the IR and the front end speak one language."""
from tinygrad.mixin.elementwise import ElementwiseMixin
from tinygrad.mixin.movement import MovementMixin
from tinygrad.mixin.reduce import ReduceMixin
from tinygrad.mixin.linalg import LinalgMixin

class OpMixin(ElementwiseMixin, MovementMixin, ReduceMixin, LinalgMixin): pass
