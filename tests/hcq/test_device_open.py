"""A device open that fails part way gives back what it made, on a mock driver of the test's own (so "nothing left" is exact): the
error is the failing step's own, the driver holds nothing afterwards (no object, file, memory range, GPU mapping, channel or queue, no
host mapping of a doorbell page), the device registry holds no device, a second open fails the same way, and once the fault is gone
the device opens and runs. And the NV mock's doorbell check, which it runs on every GPU (it cannot tell whose page the host wrote):
a GPU opened for memory alone, with no channel, ignores another GPU's ring (CI of 538d9c8 failed 121 NV-MOCK tests in one worker,
`NV:3: doorbell rung with token 0, which no channel has`, after test_nv_rm_abi's memory tests had opened GPU 3 without a channel)."""
import os, pathlib, sys
import pytest
from tinygrad import Device
from tinygrad.device import DeviceError
from tinygrad.runtime.support.hcq import HCQCompiled, release
from tinygrad.runtime.support.hcq_mock import MockGPUError
from tinygrad.runtime.support import nv_mock, nv_rm, nv_methods as nv, nv_rm_abi as rm, amd_mock, kfd_ioctl as kfd
from tinygrad.runtime.support.nv_rm import NVRMInterface, NVDriverError
from tinygrad.runtime.ops_nv import NVDevice
from tinygrad.runtime.support.amd_kfd import KFDInterface
from tinygrad.runtime.ops_amd import AMDDevice
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's helpers are not on sys.path by themselves
from hcq_checks import copy_works, queue_semaphore_release  # noqa: E402

def host_maps(fd:int|None) -> int:
  """the number of host mappings of the file open as fd (/proc/self/maps gives each mapping's inode in its fifth column)"""
  if fd is None: return 0
  ino = os.fstat(fd).st_ino
  return sum(len(f) > 5 and f[4] == str(ino) for f in map(str.split, pathlib.Path("/proc/self/maps").read_text().splitlines()))

def test_release_runs_every_step_last_first_and_keeps_the_opens_error():
  ran = []
  def fails(what): raise OSError(9, f"{what} would not go")
  steps = lambda: [lambda: ran.append("file"), lambda: fails("the queue"), lambda: ran.append("memory")]
  with pytest.raises(OSError, match="the queue would not go"): release(steps())
  assert ran == ["memory", "file"]  # the step after the failing one ran too
  cause = RuntimeError("the open failed here")
  release(steps(), cause)  # the open's error is what goes up; what closing it hit rides along as a note
  assert sys.version_info < (3, 11) or cause.__notes__ == ["and giving back what the open had made failed: OSError: [Errno 9] the queue would not go"]

# *** NV ***

@pytest.fixture
def nv_kernel(monkeypatch):
  """a mock NVIDIA driver of the test's own, which the devices the test opens use"""
  monkeypatch.setattr(nv_mock, "_kernel", k := nv_mock.MockNVKernel())
  return k

def nv_held(k) -> tuple:
  """what the mock NVIDIA driver and the process hold for it: RM objects, files, UVM ranges, channels; our GPU virtual addresses and
  GPU mappings there; host mappings of GPU 3's doorbell page, less the mock GPU's own (made at the first mapping, kept)"""
  ours = [va for va in k.system.mem.starts if nv_rm.VA_BASE <= va < nv_rm.VA_LIMIT]
  return (dict(k.objects), dict(k.fds), dict(k.ranges), [dict(g.channels) for g in k.gpus], (nv_rm.VAS.top, list(nv_rm.VAS.free)), ours,
          host_maps(k.gpus[3].doorbell_fd) - (k.gpus[3].doorbell is not None))

def _refuse(monkeypatch, k, handler:str, when, why:str):
  real = getattr(k, handler)
  monkeypatch.setattr(k, handler, lambda p: k._fail(p, why) if when(p) else real(p))

# each fault at a step late in the open: the last RM object the interface makes (after the doorbell page is mapped), the second
# channel's engine object (after the first channel and both channels' memory), the channel group's scheduling (after both channels),
# and the setup methods the device pushes (after HCQCompiled's memory; the mock faults the channel from inside the doorbell's ring)
NV_FAULTS = {
  "context share": (lambda m, k: _refuse(m, k, "_alloc", lambda p: p.hClass == rm.FERMI_CONTEXT_SHARE_A, "refused"),
                    NVDriverError, r"NV:3: RM_ALLOC of class 0x9067 under 0x[0-9a-f]+ failed with status 0x1f"),
  "copy engine": (lambda m, k: _refuse(m, k, "_alloc", lambda p: p.hClass == nv_mock.engine_classes()[2], "refused"),
                  NVDriverError, r"NV:3: RM_ALLOC of class 0xc7b5 under 0x[0-9a-f]+ failed with status 0x1f"),
  "schedule": (lambda m, k: _refuse(m, k, "_control", lambda p: p.cmd == rm.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, "refused"),
               NVDriverError, r"NV:3: RM_CONTROL 0xa06c0101 on 0x[0-9a-f]+ failed with status 0x1f"),
  "setup methods": (lambda m, k: m.setattr(nv, "memory_windows", lambda: nv.method(nv.SUBC_COMPUTE, 0x1234, 0)),
                    MockGPUError, r"NV:3: method 0x1234 on subchannel 1 is not one the encoder emits"),
}

def fails_then_opens(kernel, monkeypatch, fault, held, name:str, device_class):
  """the open fails with the fault's error, twice (the first failure left nothing in the way) and leaves the driver as it was; without
  the fault the device opens, copies, and its close gives everything back"""
  inject, error, message = fault
  before = held(kernel)
  with monkeypatch.context() as m:
    inject(m, kernel)
    for _ in range(2):
      with pytest.raises(error, match=message): Device[name]
      assert held(kernel) == before and name not in Device._opened
  dev = device_class(name)  # not the registry's: it runs on this test's mock driver
  copy_works(dev)
  dev.iface.close()
  assert held(kernel) == before

@pytest.mark.parametrize("step", NV_FAULTS)
def test_nv_open_failing_late_leaves_nothing_and_opens_once_the_fault_is_gone(nv_kernel, monkeypatch, step):
  fails_then_opens(nv_kernel, monkeypatch, NV_FAULTS[step], nv_held, "NV:3", NVDevice)

def test_nv_interface_close_gives_back_everything(nv_kernel):
  before = nv_held(nv_kernel)
  iface = NVRMInterface(3, nv_kernel)
  iface.create_channel("COPY")
  iface.alloc(1 << 16), iface.alloc(1 << 12, host_visible=True)
  assert nv_held(nv_kernel) != before
  iface.close()
  assert nv_held(nv_kernel) == before and not nv_kernel.objects and not nv_kernel.fds and not nv_kernel.ranges

def test_a_gpu_opened_for_memory_alone_ignores_another_gpus_doorbell_and_a_token_no_channel_has_faults(nv_kernel):
  memory_only, iface = NVRMInterface(3, nv_kernel), NVRMInterface(0, nv_kernel)  # GPU 3: its doorbell page mapped, no channel
  memory_only.alloc(0x1000, host_visible=True)
  ch = iface.create_channel("COPY")
  iface.schedule()
  sem = queue_semaphore_release(iface, ch, 42)
  ch.ring_doorbell(1)
  assert sem.cpu_view().cast("Q")[0] == 42
  iface.doorbell[rm.NVC361_NOTIFY_CHANNEL_PENDING // 4] = 0xBAD  # a token no channel of GPU 0 has: the mock still refuses it
  with pytest.raises(MockGPUError, match="NV:0: doorbell rung with token 2989, which no channel has"): nv_kernel.doorbell_rung()
  nv_kernel.doorbell_rung()  # that write was served: nothing is pending now
  for i in (memory_only, iface): i.close()
  assert not nv_kernel.objects and not nv_kernel.fds

# *** AMD ***

@pytest.fixture
def amd_kernel(monkeypatch):
  """a mock KFD of the test's own, which the devices the test opens use"""
  monkeypatch.setattr(amd_mock, "_kernel", k := amd_mock.MockKFDKernel())
  return k

def amd_held(k) -> tuple:
  """what the mock KFD and the process hold for it: files, memory, queues, GPU mappings; host mappings of GPU 1's doorbell page, less
  the mock GPU's own"""
  return (dict(k.fds), dict(k.allocs), [dict(g.queues) for g in k.gpus], list(k.system.mem.starts), host_maps(k.gpus[1].doorbell_fd) - 1)

def _amd_refuse(monkeypatch, k, handler:str, when, err:OSError):
  real = getattr(k, handler)
  def refuse(node, a):
    if when(a): raise err
    return real(node, a)
  monkeypatch.setattr(k, handler, refuse)

# each fault late in its part of the open: the VM (the interface's last step, after both files), the renderer (after the interface),
# the SDMA queue (after the compute queue and its memory), the staging buffer HCQCompiled maps last but one (after both queues)
AMD_FAULTS = {
  "VM": (lambda m, k: _amd_refuse(m, k, "_acquire_vm", lambda a: True, OSError(22, "mock KFD: no VM today")), OSError, "no VM today"),
  "renderer": (lambda m, k: m.setattr(type(Device), "renderer_for", lambda self, name: (_ for _ in ()).throw(DeviceError("no renderer today"))),
               DeviceError, "no renderer today"),
  "copy queue": (lambda m, k: _amd_refuse(m, k, "_create_queue", lambda a: a.queue_type == kfd.KFD_IOC_QUEUE_TYPE_SDMA,
                                          OSError(28, "mock KFD: no SDMA engine left")), OSError, "no SDMA engine left"),
  "staging memory": (lambda m, k: _amd_refuse(m, k, "_map", lambda a: k.allocs[a.handle]["size"] == HCQCompiled.STAGING_SIZE,
                                              OSError(12, "mock KFD: out of GTT")), OSError, "out of GTT"),
}

@pytest.mark.parametrize("step", AMD_FAULTS)
def test_amd_open_failing_late_leaves_nothing_and_opens_once_the_fault_is_gone(amd_kernel, monkeypatch, step):
  fails_then_opens(amd_kernel, monkeypatch, AMD_FAULTS[step], amd_held, "AMD:1", AMDDevice)
  assert not amd_kernel.fds and not amd_kernel.allocs

def test_a_destroyed_amd_queue_gives_its_id_and_doorbell_to_the_next_starting_at_write_pointer_0(amd_kernel):
  first = KFDInterface(1, amd_kernel)
  q = first.create_queue("COPY")
  q.doorbell.cast("Q")[0] = 64  # a write pointer it last rang, left in the doorbell slot
  first.close()
  assert not amd_kernel.gpus[1].queues
  second = KFDInterface(1, amd_kernel)
  q2 = second.create_queue("COPY")
  amd_kernel.gpus[1].doorbell_rung()  # the GPU reads every queue's doorbell: the new queue's is 0, it has nothing to run
  assert q2.queue_id == q.queue_id and amd_kernel.gpus[1].queues[q2.queue_id].wptr_seen == 0
  second.close()
