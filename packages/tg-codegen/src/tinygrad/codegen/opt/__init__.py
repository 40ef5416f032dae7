"""The kernel optimizer: opts (codegen/opt/kernel.py) chosen by KernelInfo.opts_to_apply, else by the hand-coded heuristic
(heuristic.py) or by timing them on the device under BEAM=N (search.py), none under NOOPT=1. Runs on the kernel AST before lowering."""
from __future__ import annotations
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.helpers import NOOPT, BEAM
from tinygrad.codegen.opt.kernel import Opt, OptOps, OptError, apply_opt, apply_opts, axes
from tinygrad.codegen.opt.heuristic import THREADS, hand_coded_opts
from tinygrad.codegen.opt.split_ranges import split_divided_ranges
from tinygrad.codegen.opt.merge_ranges import merge_adjacent_ranges

def optimize(ast:UOp, renderer) -> UOp:
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  if info.applied_opts: return ast
  if info.opts_to_apply is not None: return apply_opts(ast, info.opts_to_apply, renderer)  # the kernel as written
  if NOOPT: return ast
  ast = split_divided_ranges(merge_adjacent_ranges(ast))  # what the heuristic and BEAM choose opts for (and BEAM caches them under)
  if BEAM >= 1:
    from tinygrad.codegen.opt.search import beam_search
    try: return apply_opts(ast, beam_search(ast, renderer, BEAM.value), renderer)
    except OptError: pass  # a winner cached under rules that have since refused it: the heuristic's opts instead
  return apply_opts(ast, hand_coded_opts(ast, renderer), renderer)

__all__ = ["Opt", "OptOps", "OptError", "apply_opt", "apply_opts", "axes", "optimize", "hand_coded_opts", "THREADS"]
