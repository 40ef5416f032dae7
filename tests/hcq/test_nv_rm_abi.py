"""The NVIDIA driver ABI (nv_rm_abi.py), against sizes and offsets counted by hand from the 535-series headers (C layout: each field
at the next multiple of its alignment, NvU64/NvP64 and NV_ALIGN_BYTES(8) fields on 8, the struct padded to its largest alignment),
and the mock kernel driver's checks of the calls NVRMInterface makes."""
import ctypes, pathlib, sys
import pytest
from tinygrad.runtime.support import nv_rm_abi as rm
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's helpers are not on sys.path by themselves
from hcq_checks import queue_semaphore_release  # noqa: E402

def layout(s) -> tuple: return ctypes.sizeof(s), {name: getattr(s, name).offset for name, *_ in s._fields_}

@pytest.mark.parametrize("struct, size, offsets", [
  (rm.NVOS00_PARAMETERS, 16, {"hObjectOld": 8, "status": 12}),
  (rm.NVOS02_PARAMETERS, 48, {"flags": 16, "pMemory": 24, "limit": 32, "status": 40}),
  (rm.nv_ioctl_nvos02_parameters_with_fd, 56, {"fd": 48}),
  (rm.NVOS21_PARAMETERS, 32, {"hClass": 12, "pAllocParms": 16, "paramsSize": 24, "status": 28}),
  (rm.NVOS33_PARAMETERS, 48, {"hMemory": 8, "offset": 16, "length": 24, "pLinearAddress": 32, "status": 40, "flags": 44}),
  (rm.nv_ioctl_nvos33_parameters_with_fd, 56, {"fd": 48}),
  (rm.NVOS54_PARAMETERS, 32, {"cmd": 8, "flags": 12, "params": 16, "paramsSize": 24, "status": 28}),
  (rm.nv_ioctl_register_fd_t, 4, {"ctl_fd": 0}),
  (rm.NV0080_ALLOC_PARAMETERS, 56, {"flags": 16, "vaSpaceSize": 24, "vaStartInternal": 32, "vaLimitInternal": 40, "vaMode": 48}),
  (rm.NV2080_ALLOC_PARAMETERS, 4, {"subDeviceId": 0}),
  (rm.NV_VASPACE_ALLOCATION_PARAMETERS, 48, {"vaSize": 8, "vaStartInternal": 16, "vaLimitInternal": 24, "bigPageSize": 32, "vaBase": 40}),
  (rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, 20, {"engineType": 12, "bIsCallingContextVgpuPlugin": 16}),
  (rm.NV_CTXSHARE_ALLOCATION_PARAMETERS, 12, {"subctxId": 8}),
  (rm.NV_MEMORY_DESC_PARAMS, 24, {"size": 8, "addressSpace": 16, "cacheAttrib": 20}),
  # hUserdMemory[8] 32..64, userdOffset[8] 64..128, four 24-byte memory descriptors from 144, IVs and the nonce to 360
  (rm.NV_CHANNEL_ALLOC_PARAMS, 360, {"gpFifoOffset": 8, "gpFifoEntries": 16, "hContextShare": 24, "hVASpace": 28, "hUserdMemory": 32,
    "userdOffset": 64, "engineType": 128, "hObjectEccError": 140, "instanceMem": 144, "userdMem": 168, "ramfcMem": 192, "mthdbufMem": 216,
    "hPhysChannelGroup": 240, "internalFlags": 244, "errorNotifierMem": 248, "eccErrorNotifierMem": 272, "ProcessID": 296,
    "encryptIv": 304, "decryptIv": 316, "hmacNonce": 328}),
  (rm.NV_MEMORY_ALLOCATION_PARAMS, 120, {"zcullCovg": 40, "rangeLo": 48, "size": 64, "alignment": 72, "address": 96, "ctagOffset": 104,
    "hVASpace": 108, "tag": 116}),
  (rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, 268, {"length": 8, "data": 12}),
  (rm.NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS, 2, {"bSkipSubmit": 1}),
  (rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS, 16, {"numClasses": 0, "classList": 8}),  # an NvU32, then an 8-aligned NvP64
  (rm.NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS, 16, {"implementation": 4, "revision": 8, "subRevision": 12}),  # three NvU32, an NvU8, padding
  (rm.UVM_INITIALIZE_PARAMS, 16, {"rmStatus": 8}),
  (rm.UVM_REGISTER_GPU_PARAMS, 40, {"numaEnabled": 16, "numaNodeId": 20, "rmCtrlFd": 24, "hClient": 28, "hSmcPartRef": 32, "rmStatus": 36}),
  (rm.UVM_REGISTER_GPU_VASPACE_PARAMS, 32, {"rmCtrlFd": 16, "hClient": 20, "hVaSpace": 24, "rmStatus": 28}),
  (rm.UVM_CREATE_EXTERNAL_RANGE_PARAMS, 24, {"length": 8, "rmStatus": 16}),
  (rm.UvmGpuMappingAttributes, 36, {"gpuMappingType": 16, "gpuCompressionType": 32}),
  # 32 (UVM_MAX_GPUS in 535) attributes of 36 bytes from 24, then the 8-aligned count
  (rm.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, 1200, {"offset": 16, "perGpuAttributes": 24, "gpuAttributesCount": 1176, "rmCtrlFd": 1184,
    "hClient": 1188, "hMemory": 1192, "rmStatus": 1196}),
  (rm.UVM_FREE_PARAMS, 24, {"rmStatus": 16}),
])
def test_layout_matches_the_header(struct, size, offsets):
  got_size, got = layout(struct)
  assert got_size == size and {k: got[k] for k in offsets} == offsets

def test_ioctl_numbers():
  # _IOWR('F', NV_ESC_RM_ALLOC 0x2B, 32 bytes) and _IOWR('F', NV_ESC_REGISTER_FD = NV_IOCTL_BASE 200 + 1, 4 bytes)
  assert rm.nv_iowr(rm.NV_ESC_RM_ALLOC, 32) == 0xC020462B and rm.nv_iowr(rm.NV_ESC_REGISTER_FD, 4) == 0xC00446C9
  assert rm.nv_escape(0xC020462B) == 0x2B and rm.UVM_INITIALIZE == 0x30000001 and rm.UVM_MAP_EXTERNAL_ALLOCATION == 33

def test_driver_series_is_read_and_checked():
  from tinygrad.runtime.ops_nv import driver_series
  assert driver_series("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.113.01  Release Build  (dvs-builder@U16)") == 535
  assert driver_series("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024") == 550
  with pytest.raises(RuntimeError, match="cannot read the driver version"): driver_series("garbage")

# *** the mock kernel driver refuses what the real one would ***

@pytest.fixture
def iface():
  from tinygrad.runtime.support.nv_mock import mock_kernel
  from tinygrad.runtime.support.nv_rm import NVRMInterface
  return NVRMInterface(2, mock_kernel())

def test_rm_alloc_checks_parent_class_and_parameter_size(iface):
  from tinygrad.runtime.support.nv_rm import NVDriverError
  with pytest.raises(NVDriverError, match="RM_ALLOC of class 0xc56f"): iface.alloc_object(iface.device, rm.AMPERE_CHANNEL_GPFIFO_A, rm.NV_CHANNEL_ALLOC_PARAMS())
  assert "not under" in iface.os.last_error
  with pytest.raises(NVDriverError, match="RM_ALLOC of class 0x2080"): iface.alloc_object(iface.device, rm.NV20_SUBDEVICE_0, rm.NV0080_ALLOC_PARAMETERS())
  assert "takes 4 parameter bytes, got 56" in iface.os.last_error

def test_uvm_needs_initialize_and_a_registered_gpu(iface):
  from tinygrad.runtime.support.nv_rm import NVDriverError
  k = iface.os
  fresh = k.open("/dev/nvidia-uvm")
  p = rm.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=0x1000, length=0x1000)
  k.ioctl(fresh, rm.UVM_CREATE_EXTERNAL_RANGE, p)
  assert p.rmStatus != 0 and "UVM_INITIALIZE first" in k.last_error
  with pytest.raises(NVDriverError, match="UVM UVM_REGISTER_GPU failed"):
    iface._uvm(rm.UVM_REGISTER_GPU, rm.UVM_REGISTER_GPU_PARAMS(gpu_uuid=rm.NvProcessorUuid(*b"not a gpu uuid!!")))

def test_memory_is_mapped_into_the_gpu_at_the_host_address(iface):
  buf = iface.alloc(0x3000, host_visible=True)
  buf.cpu_view()[:4] = b"\x01\x02\x03\x04"
  assert bytes(iface.os.system.mem.view(buf.va, 4)) == b"\x01\x02\x03\x04" and buf.va < 1 << 40
  vram = iface.alloc(0x2000)
  iface.os.system.mem.view(vram.va, 0x2000)[:] = b"\x07" * 0x2000  # GPU-only memory: the mock's backing, mapped at its address
  iface.free(vram)
  from tinygrad.runtime.support.hcq_mock import MockGPUError
  with pytest.raises(MockGPUError, match="not mapped|run past"): iface.os.system.mem.view(vram.va, 0x2000)

def test_a_channel_runs_only_after_its_doorbell(iface):
  ch = iface.create_channel("COPY")
  iface.schedule()
  sem = queue_semaphore_release(iface, ch, 42)
  iface.progress()
  assert sem.cpu_view().cast("Q")[0] == 0 and ch.gp_get == 0  # GPPut moved, no doorbell: the GPU has not looked
  ch.ring_doorbell(1)
  assert sem.cpu_view().cast("Q")[0] == 42 and ch.gp_get == 1

def test_the_hardware_check_script_runs_on_the_mock():
  import importlib.util, pathlib
  path = pathlib.Path(__file__).parents[2] / "bench" / "nv_driver_check.py"
  spec = importlib.util.spec_from_file_location("nv_driver_check", path)
  spec.loader.exec_module(mod := importlib.util.module_from_spec(spec))
  assert mod.check(3, size=1 << 16) >= 0

def test_freed_gpu_address_ranges_are_taken_again():
  # our GPU virtual addresses come from one range below 2**40 for the process: a long run that frees and allocates buffers of the same
  # sizes reuses the ranges it freed instead of walking off the end (the mock driver checks UVM ranges and mappings never overlap)
  from tinygrad.runtime.support import nv_rm
  from tinygrad.runtime.ops_nv import host_os
  iface = nv_rm.NVRMInterface(3, host_os())
  first = [iface.alloc(1 << 20), iface.alloc(5000, host_visible=True)]
  vas = [b.va for b in first]
  for b in first: iface.free(b)
  for _ in range(50):
    again = [iface.alloc(1 << 20), iface.alloc(5000, host_visible=True)]
    assert sorted(b.va for b in again) == sorted(vas)
    for b in again: iface.free(b)

def test_va_ranges_first_fit_splits_and_merges():
  from tinygrad.runtime.support.va_ranges import VARanges
  K = 1 << 16
  r = VARanges(0x100000, 0x100000 + 16 * K, align=K)
  a, b, c, d = r.take(K), r.take(2 * K), r.take(K), r.take(3 * K)
  assert (a, b, c, d) == (0x100000, 0x100000 + K, 0x100000 + 3 * K, 0x100000 + 4 * K) and r.top == 0x100000 + 7 * K
  r.give(b, 2 * K)
  assert r.take(1) == b and r.free == [(b + K, K)]  # first fit splits the freed range: its rest stays free
  r.give(b, K)                                     # merged with the rest after it
  r.give(a, K)                                     # and with a before it: one range of 3 spans
  assert r.free == [(a, 3 * K)]
  r.give(c, K)                                     # a, b and c merged: 4 spans
  assert r.free == [(a, 4 * K)] and r.take(4 * K) == a and r.free == []
  r.give(d, 3 * K)                                 # at the top: the top comes down instead
  assert r.top == d and r.free == []
  with pytest.raises(ValueError, match="free already"): r.give(d, K)
  with pytest.raises(ValueError, match="not handed out"): r.give(a + K // 2, K)
  r.take(12 * K)
  with pytest.raises(MemoryError, match="no 0x10000 bytes"): r.take(1)

def test_freed_gpu_address_ranges_of_other_sizes_are_reused():
  # buffers freed side by side serve a larger allocation at the first one's address; a large freed range serves smaller ones
  from tinygrad.runtime.support import nv_rm
  from tinygrad.runtime.ops_nv import host_os
  iface = nv_rm.NVRMInterface(3, host_os())
  bufs = [iface.alloc(1 << 16) for _ in range(3)] + [iface.alloc(1 << 16, host_visible=True)]  # the last keeps the top above them
  iface.free(bufs[0]); iface.free(bufs[1])
  big = iface.alloc(2 << 16)
  assert big.va == bufs[0].va  # the two freed 64 KiB ranges, merged
  iface.free(big); iface.free(bufs[2])
  small = [iface.alloc(4096, host_visible=True) for _ in range(3)]
  assert [b.va for b in small] == [bufs[0].va + i * (1 << 16) for i in range(3)]  # the 192 KiB freed range, split
  for b in small + [bufs[3]]: iface.free(b)

def test_video_memory_running_out_is_a_memory_error_that_leaks_nothing(monkeypatch):
  # RM answers NV_ERR_NO_MEMORY: the allocator sees a MemoryError (which it answers by waiting for deferred frees, as for KFD's ENOMEM),
  # and the failed allocation gave back its address range and host reservation, so a later one at the same address succeeds
  from tinygrad.runtime.support import nv_rm, nv_mock
  from tinygrad.runtime.ops_nv import host_os
  iface = nv_rm.NVRMInterface(3, host_os())
  kernel = iface.os  # room for 3 MiB more than the video memory earlier tests left allocated on this mock GPU
  used = sum(o.attrs["size"] for o in kernel.objects.values() if o.cls == nv_mock.rm.NV01_MEMORY_LOCAL_USER and o.gpu is kernel.gpus[3])
  monkeypatch.setattr(nv_mock, "VRAM_BYTES", used + (3 << 20))
  a, b = iface.alloc(1 << 20), iface.alloc(1 << 20)
  top = nv_rm.VAS.top
  with pytest.raises(MemoryError, match=r"RM_ALLOC of class 0x40 .* status 0x51"): iface.alloc(2 << 20)
  assert nv_rm.VAS.top == top  # the range it took is back
  iface.free(b)
  c = iface.alloc(2 << 20)  # the same address again: no host mapping was left behind there (MAP_FIXED_NOREPLACE would refuse)
  assert c.va == b.va
  for buf in (a, c): iface.free(buf)
