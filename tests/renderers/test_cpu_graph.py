"""TinyJit's replay on the CPU goes through CPUGraph (launches worked out once, the whole step one native call where the native pool
runs): new input buffers each call, shared kernels, a kernel sized by a Variable, an input off the kernels' alignment, one thread and
DEBUG=2's per-kernel path all give numpy's answers."""
import contextlib, io
import numpy as np, pytest
from tinygrad import Tensor, TinyJit, Device
from tinygrad.device import Buffer
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.uop.ops import Variable
from tinygrad.engine import realize
from tinygrad.runtime.graph_cpu import CPUGraph
from tinygrad.codegen.opt import THREADS  # noqa: F401  (defines the ContextVar)

def rand(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)

def test_replay_is_a_cpu_graph_over_new_inputs():
  # a sum big enough to be split into partials, whose first kernel runs in shares on both threads
  f = TinyJit(lambda a, b: ((a * b).sum() + a.max(), (a - b).relu()))
  with Context(THREADS=2):
    for i in range(5):
      a, b = rand(1 << 17, seed=i), rand(1 << 17, seed=i + 10)
      s, r = f(Tensor(a), Tensor(b))
      np.testing.assert_allclose(s.numpy(), (a * b).sum() + a.max(), rtol=1e-4)
      np.testing.assert_equal(r.numpy(), np.maximum(a - b, 0))
  assert isinstance(f.captured.graph, CPUGraph)
  assert any(c.shares > 1 for c in f.captured.graph.calls)
  GlobalCounters.reset()
  f(Tensor(a), Tensor(b))
  assert GlobalCounters.kernel_count == len(f.captured.graph.calls)

def test_variable_values_reach_each_replay():
  v, data = Variable("n", 1, 64), rand(64, 4096)
  f = TinyJit(lambda x: (x * 2).sum(1))
  with Context(THREADS=2):
    for n in (40, 7, 64, 1):
      out = f(Tensor(data).shrink(((0, v.bind(n)), None)).contiguous())
      np.testing.assert_allclose(out.numpy(), (data[:n] * 2).sum(1), rtol=1e-4, atol=1e-4)
  assert isinstance(f.captured.graph, CPUGraph)  # each replay passes its own value as the kernel's argument
  from tinygrad.runtime import cpu_pool
  assert f.captured.graph.batch is not None or cpu_pool.native() is None  # written into its argument block, in the one native call

def _graph_of_add_one(n:int):
  """a CPUGraph of one kernel out = in + 1 over n floats, input 0 of the replay, and its output Buffer"""
  items, _ = realize.create_schedule_cached([(Tensor.empty(n) + 1).uop])
  (it,) = items
  out = realize.buffer_of(it.bufs[0])
  spec, prg = realize.prepare_kernel(it.ast, "CPU")
  return CPUGraph(Device["CPU"], [(spec, prg, [out, 0], {})]), out

def test_an_input_off_the_alignment_runs_on_a_copy():
  graph, out = _graph_of_add_one(16)
  base = Buffer("CPU", 17, dtypes.float32).allocate()
  x = rand(17)
  base.copyin(memoryview(x.tobytes()))
  graph([base.view(16, dtypes.float32, 4).ensure_allocated()], {})  # 4 bytes in: not a multiple of the LLVM kernels' 64
  np.testing.assert_equal(np.frombuffer(out.as_buffer(), np.float32), x[1:] + 1)

def test_debug_2_prints_each_kernel():
  graph, out = _graph_of_add_one(8)
  x = Buffer("CPU", 8, dtypes.float32).allocate().copyin(memoryview(np.arange(8, dtype=np.float32).tobytes()))
  with Context(DEBUG=2), contextlib.redirect_stdout(io.StringIO()) as log: graph([x], {})
  assert graph.kernels[0][0].name in log.getvalue()
  np.testing.assert_equal(np.frombuffer(out.as_buffer(), np.float32), np.arange(8) + 1)

@pytest.mark.parametrize("threads", [1, 2])
def test_graph_and_eager_agree_bit_for_bit(threads):
  x = rand(300, 257)
  f = TinyJit(lambda t: (t.exp() * 3).sum(0))
  with Context(THREADS=threads):
    for _ in range(3): out = f(Tensor(x)).numpy()
    np.testing.assert_equal(out, (Tensor(x).exp() * 3).sum(0).numpy())

def test_replay_is_one_native_call(monkeypatch):
  # where the native pool runs, a replay's kernels (shared and not) go to it in one call: no _Call runs; on one thread, or with an
  # input off the kernels' alignment, the replay takes the per-kernel path. Every way gives numpy's answers
  from tinygrad.runtime import cpu_pool, graph_cpu
  native = cpu_pool.native() is not None  # without it (no llvmlite) every replay is per kernel
  f = TinyJit(lambda a, b: ((a * b).sum() + a.max(), (a - b).relu() * 2))
  calls = []
  orig = graph_cpu._Call.__call__
  monkeypatch.setattr(graph_cpu._Call, "__call__", lambda self, *args: (calls.append(self), orig(self, *args))[1])
  with Context(THREADS=2):
    for i in range(4):
      a, b = rand(1 << 17, seed=i), rand(1 << 17, seed=i + 10)
      s, r = f(Tensor(a), Tensor(b))
      np.testing.assert_allclose(s.numpy(), (a * b).sum() + a.max(), rtol=1e-4)
      np.testing.assert_equal(r.numpy(), np.maximum(a - b, 0) * 2)
    graph = f.captured.graph
    assert (graph.batch is not None) == native and any(c.shares > 1 for c in graph.calls) and any(c.shares == 1 for c in graph.calls)
    calls.clear()
    GlobalCounters.reset()
    s, r = f(Tensor(a), Tensor(b))
    assert len(calls) == (0 if native else len(graph.calls)) and GlobalCounters.kernel_count == len(graph.calls)
    calls.clear()
  with Context(THREADS=1):
    s, r = f(Tensor(a), Tensor(b))
    assert len(calls) == len(graph.calls)
  np.testing.assert_allclose(s.numpy(), (a * b).sum() + a.max(), rtol=1e-4)
  np.testing.assert_equal(r.numpy(), np.maximum(a - b, 0) * 2)
