"""The AMD and NV devices end to end through their queue code on the mock drivers (MOCKGPU=1, set by tests/conftest.py): signals,
cross-queue waits, timestamps, recorded command buffers, copies split into packets, faults, and TinyJit replays as one submission."""
import numpy as np, pytest
from tinygrad import Tensor, TinyJit, Device, dtypes
from tinygrad.uop.ops import UOp, Variable
from tinygrad.helpers import GlobalCounters
from tinygrad.runtime.support.hcq import DeviceHang
from tinygrad.runtime.support.hcq_mock import MockGPUError
from tinygrad.runtime.support.code_object import CodeObject
from tinygrad.runtime.support.nv_rm_abi import USERD_GP_PUT

ALL = pytest.mark.parametrize("name", ["AMD", "NV"])

def submissions(dev) -> int:
  """command buffers the host handed the compute engine: doorbells on the AMD compute ring, GP entries on the NV compute channel"""
  return dev.compute_ring.submissions if dev.device.startswith("AMD") else dev.channels["COMPUTE"].submissions

@ALL
def test_tinyjit_replay_is_one_command_buffer_per_step(name):
  dev = Device[name]
  w = Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), device=name).realize()
  @TinyJit
  def step(x):
    out = (x @ w).relu().sum(1)
    w.assign(w * 0.5)
    return out
  ws, rng = w.numpy(), np.random.default_rng(0)
  for i in range(5):
    x = rng.standard_normal((2, 4), dtype=np.float32)
    xt = Tensor(x, device=name).realize()
    before = submissions(dev)
    GlobalCounters.reset()
    out = step(xt)
    if i >= 2: assert submissions(dev) - before == 1 and GlobalCounters.kernel_count == 2  # a replay: one submission, two kernels
    want = np.maximum(x @ ws, 0).sum(1)  # out was computed before the assign: it keeps the weights it read (eager semantics)
    ws = ws * 0.5
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), ws, rtol=1e-6)
  assert step.captured.graph is not None

@ALL
def test_tinyjit_replay_with_a_variable(name):
  @TinyJit
  def f(a, n): return (a[:n] * 2).sum()
  data = np.arange(10, dtype=np.float32)
  for n in [3, 5, 7, 4, 9]:
    v = Variable("n", 1, 10).bind(n)
    assert f(Tensor(data, device=name).realize(), v).item() == 2 * data[:n].sum()

@ALL
def test_cross_queue_wait_blocks_until_the_other_queue_signals(name):
  dev = Device[name]
  gate, done = dev.new_signal(), dev.new_signal()
  dev.compute_queue().wait(gate, 1).signal(done, 5).submit()
  assert done.value == 0  # the compute queue is stalled on the gate
  dev.copy_queue().signal(gate, 1).submit()
  done.wait(5)
  assert done.value == 5

@ALL
def test_waiting_on_a_signal_nobody_sets_is_a_hang(name):
  dev = Device[name]
  with pytest.raises(DeviceHang, match="no queue can make progress"): dev.new_signal().wait(1)

@ALL
def test_timestamps_are_written_and_ordered(name):
  dev = Device[name]
  a, b, s = dev.new_signal(), dev.new_signal(), dev.new_signal()
  dev.compute_queue().timestamp(a).timestamp(b).signal(s, 1).submit()
  s.wait(1)
  assert 0 < a.timestamp <= b.timestamp

@ALL
def test_recorded_command_buffer_resubmitted_with_patched_values(name):
  dev = Device[name]
  sig, val = dev.new_signal(), UOp.variable("val", 0, 2**40, dtypes.uint64)
  cb = dev.compute_queue().signal(sig, val * 2 + 1).record()
  for v in (3, 2**33, 10):
    dev.submit("COMPUTE", cb, {"val": v})
    sig.wait(v * 2 + 1)
    assert sig.value == v * 2 + 1

@ALL
def test_large_copy_splits_into_packets(name):
  dev = Device[name]
  n = (4 << 20) + 12  # past one SDMA COPY_LINEAR (4 MiB)
  src, dst = dev.allocator.alloc(n), dev.allocator.alloc(n)
  data = np.random.default_rng(1).integers(0, 255, n, dtype=np.uint8)
  dev.allocator._copyin(src, memoryview(data))
  dev.run_copy(dst.va, src.va, n)
  out = np.empty(n, np.uint8)
  dev.allocator._copyout(memoryview(out), dst)
  np.testing.assert_array_equal(out, data)

def private(name:str):
  """a device of its own (not the registry's), for tests that wedge its queues"""
  return type(Device[name])(name)

@ALL
def test_a_packet_the_gpu_does_not_know_faults(name):
  dev = private(name)
  if name == "AMD":  # a type-3 header of an opcode the encoders never emit
    with pytest.raises(MockGPUError, match="unknown opcode 0x7e .* at ring word 0"): dev._put(dev.compute_ring, [(3 << 30) | (0x7E << 8), 0])
  else:  # a method the encoders never emit on the bound compute subchannel; any method on a subchannel no SET_OBJECT bound
    import array
    mem = dev.iface.alloc(0x1000, host_visible=True)
    with pytest.raises(MockGPUError, match="not one the encoder emits"): dev._push("COMPUTE", array.array("I", [0x20010000 | (1 << 13) | 0x10, 7]), mem)
    with pytest.raises(MockGPUError, match="subchannel 2 before its SET_OBJECT"): dev._push("COPY", array.array("I", [0x20010000 | (2 << 13) | 0x10, 7]), mem)
    assert Device[name].channels["COMPUTE"].handle != dev.channels["COMPUTE"].handle  # the registry's device runs on (test below)
  # the faulted queue is stopped: later work on it fails at once, naming the fault and where the queue stands, and does not hang
  sig = dev.new_signal()
  dev.compute_queue().signal(sig, 1).submit()
  where = r"COMPUTE queue \d+: read pointer 0, write pointer 6 .*" if name == "AMD" else \
          r"COMPUTE channel: GPGet 1, GPPut 3; COPY channel: GPGet 1, GPPut 2; " \
          r"fault: COMPUTE channel: RM error notifier: channel error 13 \(Xid 13\), info16 0x0, status 0xffff; " \
          r"fault: COPY channel: RM error notifier: channel error 13 \(Xid 13\), info16 0x0, status 0xffff; "
  with pytest.raises(DeviceHang, match=f"waiting for 1, and no queue can make progress; {where}fault: .*(unknown opcode|not one the encoder)"):
    sig.wait(1)

def test_each_nv_channel_has_its_own_error_notifier_and_a_hang_names_the_channel():
  # RM writes a faulted channel's error to the notifier that channel was allocated with: a fault on the copy channel shows in its
  # notifier alone, and the hang names the copy channel
  import array
  dev = private("NV")
  kernel = dev.iface.os
  notifiers = {k: kernel.objects[ch.handle].attrs["channel"].notifier for k, ch in dev.channels.items()}
  assert notifiers == {k: ch.notifier.va for k, ch in dev.channels.items()} and notifiers["COMPUTE"] != notifiers["COPY"]
  with pytest.raises(MockGPUError, match="subchannel 2 before its SET_OBJECT"):
    dev._push("COPY", array.array("I", [0x20010000 | (2 << 13) | 0x10, 7]), dev.iface.alloc(0x1000, host_visible=True))
  assert dev.channels["COMPUTE"].error() is None and "COPY channel: RM error notifier: channel error 13" in dev.channels["COPY"].error()
  sig = dev.new_signal()
  dev.copy_queue().signal(sig, 1).submit()
  with pytest.raises(DeviceHang, match=r"no queue can make progress; COMPUTE channel: GPGet \d+, GPPut \d+; COPY channel: GPGet 1, GPPut 3; "
                                       r"fault: COPY channel: RM error notifier: channel error 13 \(Xid 13\), info16 0x0, status 0xffff; "
                                       r"fault: channel 0x[0-9a-f]+ \(copy\): .*SET_OBJECT$"):
    sig.wait(1)

@ALL
def test_a_wait_on_hardware_times_out_naming_the_signal_and_queues(name, monkeypatch):
  # on hardware progress() cannot tell a busy GPU from a stuck one: the wait gives up after its timeout
  dev = Device[name]
  monkeypatch.setattr(dev.iface, "progress", lambda: True)
  sig = dev.new_signal()
  with pytest.raises(DeviceHang, match=f"signal at {sig.va:#x} is 0, waiting for 1, still after 0.05s; COMPUTE (queue|channel)"): sig.wait(1, 0.05)

@ALL
def test_program_without_uops_cannot_run_on_the_mock(name):
  dev = private(name)
  prg = dev.runtime("k", CodeObject("k", b"\x00" * 16, b"").pack())
  with pytest.raises(MockGPUError, match="carries no UOps"): prg(global_size=(1, 1, 1), local_size=(1, 1, 1))

@ALL
def test_code_object_round_trip_and_corruption(name):
  co = CodeObject("kern", b"\x01\x02", b'{"uops": []}', {"rsrc1": 5})
  assert CodeObject.unpack(co.pack()) == co
  with pytest.raises(ValueError, match="truncated"): CodeObject.unpack(co.pack()[:-1])
  with pytest.raises(ValueError, match="not a tg code object"): CodeObject.unpack(b"ELF\x00" + co.pack()[4:])

@ALL
@pytest.mark.parametrize("gpu", ["eager", "lazy"])
def test_rings_wrap_around(name, gpu, monkeypatch):
  # small rings (one page: 1024 words; 16 GP entries) go round several times in 1600 submissions alternating between the queues.
  # "eager": the mock GPU runs at each doorbell. "lazy": it runs only while the host waits, so the host fills a ring and must wait for
  # room: writing over packets the GPU has not read corrupts the stream
  from tinygrad.runtime.support.hcq import WAIT, SIGNAL
  cls = type(Device[name])
  monkeypatch.setattr(cls, *(("RING_BYTES", 1 << 12) if name == "AMD" else ("GPFIFO_ENTRIES", 16)))
  dev, n = cls(name), 1600
  if gpu == "lazy":
    kernel = dev.iface.os
    monkeypatch.setattr(kernel, "doorbell_rung", lambda: [g.doorbell_rung() for g in kernel.gpus])  # the GPUs see the doorbell, run later
  sig = dev.new_signal()
  dev.copy_queue().timestamp(dev.new_signal()).submit()  # an odd number of SDMA words ahead: later packets straddle the ring's end
  cbs = [q.wait(sig, WAIT).signal(sig, SIGNAL).record() for q in (dev.compute_queue(), dev.copy_queue())]
  for v in range(1, n + 1): dev.submit(("COMPUTE", "COPY")[v % 2], cbs[v % 2], {"hcq_wait": v - 1, "hcq_signal": v})
  if gpu == "lazy": assert 0 < sig.value < n  # the GPU ran only when the host waited for room in a full ring
  sig.wait(n)
  assert sig.value == n
  if name == "AMD": went = [q.wptr.cpu_view().cast("Q")[0] // (4 if q.kind == "COPY" else 1) // 1024 for q in (dev.compute_ring, dev.sdma_ring)]
  else: went = [ch.control.cpu_view().cast("I")[USERD_GP_PUT // 4] // 16 for ch in dev.channels.values()]
  assert min(went) >= 3, went  # every ring went round at least three times

@ALL
def test_command_pool_wraps_around(name, monkeypatch):
  # a pool of 8 KiB wraps every few launches; the wrap waits for what was submitted before, not for the launch being submitted (that hung)
  from tinygrad.runtime.support.hcq import HCQCompiled
  monkeypatch.setattr(HCQCompiled, "CMD_POOL", 1 << 13)
  x = Tensor(np.arange(64, dtype=np.float32), device=name).realize()
  for _ in range(200): x = (x + 1).realize()
  np.testing.assert_array_equal(x.numpy(), np.arange(64) + 200)

@pytest.mark.parametrize("name", ["AMD"])
def test_amdgpu_llvm_renderer_on_the_mock(name):
  # DEV=AMD:LLVM: kernels compile to AMDGPU machine code with llvmlite (code object + descriptor registers); the mock runs the UOps
  # the code object carries beside it
  from tinygrad.engine.realize import _runtimes
  a = np.arange(24, dtype=np.float32).reshape(4, 6)
  t = Tensor(a, device="AMD:LLVM")
  np.testing.assert_allclose((t @ t.T).relu().sum(1).numpy(), np.maximum(a @ a.T, 0).sum(1), rtol=1e-6)
  progs = [p for (_, dev), p in _runtimes.items() if dev == "AMD:LLVM"]
  co = CodeObject.unpack(progs[-1].mem.cpu_view()[:CodeObject.size_at(progs[-1].mem.cpu_view()[:256])])
  assert co.machine_code and co.uops_json and co.meta["rsrc1"] != 0 and co.meta["kernarg_size"] >= 16
  assert co.meta["props"] & 0x40f == 0x408  # LLVM's kernel asks for the kernarg pointer alone (bit 3) and runs wave32 (bit 10)

@ALL
def test_tinyjit_replay_spans_devices_with_a_finalizer(name):
  # a step sharded over two devices is one graph: one submission per device per replay, and the first device's part ends with a
  # finalizer that waits for the second's, so the first device's timeline reaching the step's value means the whole step is done
  devs = (name, f"{name}:1")
  @TinyJit
  def step(x): return (x * 2 + 1).relu()
  rng = np.random.default_rng(2)
  for i in range(4):
    x = rng.standard_normal((4, 6), dtype=np.float32)
    xt = Tensor(x).shard(devs, axis=0).realize()
    before = [submissions(Device[d]) for d in devs]
    out = step(xt)
    if i >= 2: assert [submissions(Device[d]) - b for d, b in zip(devs, before)] == [1, 1]
    np.testing.assert_allclose(out.numpy(), np.maximum(x * 2 + 1, 0), rtol=1e-6)
  g = step.captured.graph
  assert g is not None and sorted(d.device for d in g.devs) == sorted(devs)
  # hold the second device's compute queue on a gate: the first device's part runs its kernels but its finalizer waits
  first, second = g.devs
  gate = second.new_signal()
  second.compute_queue().wait(gate, 1).submit()  # not on the timeline: the replay's part queues behind it
  step(Tensor(np.ones((4, 6), np.float32)).shard(devs, axis=0).realize())
  first.iface.progress()
  assert first.timeline_signal.value == g.last[first] - 1 and second.timeline_signal.value < g.last[second]
  second.copy_queue().signal(gate, 1).submit()
  first.timeline_signal.wait(g.last[first])
  assert second.timeline_signal.value >= g.last[second]

def test_unmapping_memory_forgets_the_programs_decoded_from_it():
  # a driver may map new memory at an address freed before (KFD does); a program decoded from the old pages must not run for the new
  import mmap
  from tinygrad.runtime.support.hcq_mock import MockMemory, EmulatedLaunches
  mem = MockMemory()
  launches = EmulatedLaunches(mem)
  mem.map(0x10000, memoryview(mmap.mmap(-1, 0x2000)))
  launches.programs[0x10100] = "decoded from the old pages"
  mem.unmap(0x10000)
  assert launches.programs == {}

def test_amd_kernel_needing_scratch_is_refused_at_load():
  dev = Device["AMD"]
  with pytest.raises(RuntimeError, match="needs 48 bytes of scratch per work-item"):
    dev.runtime("spilly", CodeObject("spilly", b"\x00" * 16, b"{}", {"rsrc1": 1, "rsrc2": 2, "private_segment_size": 48}).pack())

# *** a buffer freed by the garbage collector: Buffer.__del__ runs wherever a collection strikes, so the free must not wait there ***

def free_inside(monkeypatch, owner, attr:str, dev, buf, when=lambda *args: True):
  """free buf (as Buffer.__del__ does) the first time owner.attr is called with arguments `when` accepts: where a garbage collection
  would run the __del__"""
  real, left = getattr(owner, attr), [buf]
  def once(*args, **kwargs):
    if left and when(*args): dev.allocator.free(left.pop(), buf.size)
    return real(*args, **kwargs)
  monkeypatch.setattr(owner, attr, once)

@ALL
@pytest.mark.parametrize("where", ["submission", "gpu"])
def test_a_free_from_the_garbage_collector_does_not_wait(name, where, monkeypatch):
  # "submission": inside a copy's submission, after it took its timeline value and before its doorbell: waiting for the timeline
  # there waits for the copy itself, which is not queued yet (on hardware: the free times out, Buffer.__del__ swallows the error and
  # the memory leaks). "gpu": inside the mock GPU's step (the mock runs in the host's thread): a wait there ran the GPU from inside
  # itself, and the outer step went on from a stale read pointer (the fuzz's "packet runs past the write pointer")
  from tinygrad.runtime.support.hcq_select import CommandBuffer
  from tinygrad.runtime.support.hcq_mock import MockMemory
  dev = private(name)
  released = []
  real_free = dev.iface.free
  monkeypatch.setattr(dev.iface, "free", lambda b: (released.append(b.va), real_free(b)))
  src, dst, doomed = (dev.allocator.alloc(64) for _ in range(3))
  data = np.arange(16, dtype=np.float32)
  dev.allocator._copyin(src, memoryview(data).cast("B"))
  if where == "submission": free_inside(monkeypatch, CommandBuffer, "patch", dev, doomed)
  else: free_inside(monkeypatch, MockMemory, "view", dev, doomed, when=lambda mem, va, size=None: size == 64)  # the copy's packet runs
  dev.run_copy(dst.va, src.va, 64)
  out = np.empty(16, np.float32)
  dev.allocator._copyout(memoryview(out).cast("B"), dst)
  np.testing.assert_array_equal(out, data)
  assert doomed.va in released  # released once the timeline passed the work that was queued when it was freed

@ALL
def test_an_allocation_that_fails_waits_for_memory_freed_behind_queued_work(name, monkeypatch):
  # a free is released once the work queued before it is done; when memory runs out meanwhile, the allocation waits for that work
  dev = private(name)
  gate, doomed = dev.new_signal(), dev.allocator.alloc(64)
  dev.compute_queue().wait(gate, 1).signal(dev.timeline_signal, dev.next_timeline()).submit()
  dev.allocator.free(doomed, 64)
  assert dev._freed  # the queued work may read it: kept
  real_alloc, calls = dev.iface.alloc, []
  def out_of_memory_once(size, host_visible=False):
    calls.append(doomed.va in released)
    if len(calls) == 1:
      dev.copy_queue().signal(gate, 1).submit()  # the queued work can finish now (the GPU runs on)
      raise OSError(12, "out of memory")
    return real_alloc(size, host_visible)
  released, real_free = [], dev.iface.free
  monkeypatch.setattr(dev.iface, "free", lambda b: (released.append(b.va), real_free(b)))
  monkeypatch.setattr(dev.iface, "alloc", out_of_memory_once)
  assert dev.allocator.alloc(64).size >= 64
  assert calls == [False, True]  # the retry came after the freed buffer went back to the driver

# *** memory that lives as long as a program or a TinyJit graph goes back when it dies (deferred like a buffer's free) ***

def driver_bytes(dev) -> int:
  """bytes of memory the mock kernel driver holds for this device: the driver's own records, not the allocator's"""
  k = dev.iface.os
  if dev.device.startswith("AMD"): return sum(r["size"] for r in k.allocs.values() if r["gpu"].gpu_id == dev.iface.gpu_id)
  return sum(o.attrs["size"] for o in k.objects.values() if "size" in o.attrs and o.gpu is k.gpus[dev.iface.index])

def settled_bytes(dev) -> int:
  import gc
  gc.collect()
  dev.synchronize()  # hands the driver back what was freed behind queued work
  return driver_bytes(dev)

@ALL
def test_programs_loaded_and_dropped_give_their_code_memory_back(name):
  from tinygrad.engine.realize import _runtimes
  dev, a = Device[name], Tensor(np.arange(37, dtype=np.float32), device=name).realize()
  held = []
  for _ in range(6):
    for key in [k for k in _runtimes if k[1] == name]: del _runtimes[key]  # the compile cache held the program: it is loaded anew
    np.testing.assert_allclose((a * 3.25 + 1.5).numpy(), np.arange(37) * 3.25 + 1.5)
    held.append(settled_bytes(dev))
  assert held[1:] == held[1:2] * 5, held  # each round loads a program and drops the last one: the driver's total stays put

@ALL
def test_tinyjit_graphs_dropped_give_their_memory_back(name):
  dev, x = Device[name], Tensor(np.arange(12, dtype=np.float32), device=name).realize()
  held = []
  for _ in range(6):
    step = TinyJit(lambda t: (t * 2 + 1).relu())
    for _ in range(3): np.testing.assert_allclose(step(x).numpy(), np.arange(12) * 2 + 1)
    assert step.captured.graph is not None
    del step
    held.append(settled_bytes(dev))
  assert held[1:] == held[1:2] * 5, held  # a graph's kernel arguments and command buffer went back with it

@ALL
def test_graph_replay_computes_constant_launch_dims_once_and_symbolic_ones_per_replay(name, monkeypatch):
  # two kernels in one graph: one over a grid of n groups (a bound Variable), one over a constant grid. A replay writes each launch's
  # dims where the kernel reads them (NV: %nctaid in constant buffer 0, checked by the mock against the QMD's grid); the constant
  # kernel's are computed when the graph is built, the symbolic one's at every replay with that replay's n
  from tinygrad.codegen import get_program
  from tinygrad.uop.ops import KernelInfo
  from tinygrad.uop import AxisType
  from tinygrad.codegen import ProgramSpec
  from tinygrad.engine.device_base import Buffer
  from tinygrad.runtime.support.hcq import HCQGraph
  dev, renderer = Device[name], Device[name].renderer
  n = Variable("n", 1, 64)
  def kernel(size, kname):
    out = UOp.param(0, dtypes.int, (64,))
    g = UOp.range(size, 0, AxisType.GLOBAL)
    spec = get_program(out[g].store(g.cast(dtypes.int) + 100).end(g).sink(arg=KernelInfo(name=kname)), renderer)
    return spec, dev.runtime(spec.name, dev.compiler.compile(spec.src))
  (sym, sym_prg), (const, const_prg) = kernel(n, "sym_grid"), kernel(16, "const_grid")
  assert not isinstance(sym.global_size[0], int) and const.global_size == (16, 1, 1)
  bufs = [Buffer(name, 64, dtypes.int).allocate() for _ in range(2)]
  graph = HCQGraph(dev, [(sym, sym_prg, [bufs[0]], {"n": 1}), (const, const_prg, [bufs[1]], {})])
  calls = []
  real = ProgramSpec.launch_dims
  monkeypatch.setattr(ProgramSpec, "launch_dims", lambda self, vv: calls.append(self.name) or real(self, vv))
  for v in (5, 40, 3):
    for b in bufs: b.copyin(memoryview(np.full(64, -1, np.int32).tobytes()))
    graph([], {"n": v})
    dev.synchronize()
    out = [np.frombuffer(b.copyout(memoryview(bytearray(256))), np.int32) for b in bufs]
    np.testing.assert_array_equal(out[0], np.where(np.arange(64) < v, np.arange(64) + 100, -1))
    np.testing.assert_array_equal(out[1], np.where(np.arange(64) < 16, np.arange(64) + 100, -1))
  assert calls == ["sym_grid"] * 3  # the constant kernel's dims were not evaluated again
