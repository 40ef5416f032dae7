"""Tensor-style methods shared by UOp and Tensor, so the IR and the front end speak one language."""
from tinygrad.mixin.elementwise import ElementwiseMixin
from tinygrad.mixin.math import MathMixin
from tinygrad.mixin.activation import ActivationMixin
from tinygrad.mixin.movement import MovementMixin
from tinygrad.mixin.reduce import ReduceMixin
from tinygrad.mixin.linalg import LinalgMixin
from tinygrad.mixin.views import ViewsMixin
from tinygrad.mixin.select import SelectMixin
from tinygrad.mixin.scan import ScanMixin
from tinygrad.mixin.sorting import SortingMixin
from tinygrad.mixin.einsum import EinsumMixin
from tinygrad.mixin.compare import CompareMixin

class OpMixin(ElementwiseMixin, MathMixin, ActivationMixin, MovementMixin, ReduceMixin, LinalgMixin, ViewsMixin, SelectMixin, ScanMixin,
              SortingMixin, EinsumMixin, CompareMixin): pass
