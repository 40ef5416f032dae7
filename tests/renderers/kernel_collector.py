"""A pytest plugin (-p kernel_collector) that records every kernel AST the tests compile, pickled to $TG_KERNELS_OUT at the end: the
kernels the op matrix produces, for rendering and compiling them again on other targets (test_null_gpu.py)."""
import os, pickle

_seen: dict = {}

def pytest_configure(config):
  import tinygrad.engine.realize as realize
  compile_kernel = realize.get_program_cached
  def record(ast, renderer):
    _seen.setdefault(ast, None)
    return compile_kernel(ast, renderer)
  realize.get_program_cached = record

def pytest_unconfigure(config):
  with open(os.environ["TG_KERNELS_OUT"], "wb") as f: pickle.dump(list(_seen), f)
