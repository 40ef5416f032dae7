"""The KFD ioctl bindings are generated from the kernel's kfd_ioctl.h: the committed file is what the generator makes of the header,
and every struct size, field offset and ioctl number agrees with what a C compiler makes of the same header."""
import ctypes, importlib.util, os, pathlib, shutil, subprocess, sys
import pytest
import tinygrad.runtime.support.kfd_ioctl as kfd

HEADER = "/usr/include/linux/kfd_ioctl.h"
GEN = pathlib.Path(__file__).resolve().parents[2] / "packages/tg-hcq-amd/tools/gen_kfd_ioctl.py"
needs_header = pytest.mark.skipif(not os.path.exists(HEADER), reason=f"{HEADER} missing (Debian: apt-get install linux-libc-dev)")

def test_hand_checked_ioctl_numbers():
  # _IOR('K', 0x01, 8-byte struct): dir 2 << 30 | size 8 << 16 | 'K' << 8 | nr
  assert kfd.AMDKFD_IOC_GET_VERSION == 0x80084B01
  # _IOWR('K', 0x02, struct kfd_ioctl_create_queue_args): 4 u64, 6 u32, 3 u64, 2 u32 = 88 bytes
  assert ctypes.sizeof(kfd.kfd_ioctl_create_queue_args) == 88 and kfd.AMDKFD_IOC_CREATE_QUEUE == 0xC0584B02
  assert kfd.KFD_IOC_QUEUE_TYPE_SDMA == 1 and kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE == 1 << 31

@needs_header
def test_committed_bindings_are_the_generators_output():
  spec = importlib.util.spec_from_file_location("gen_kfd_ioctl", GEN)
  gen = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(gen)
  assert gen.generate(HEADER) == pathlib.Path(kfd.__file__).read_text(), "regenerate: python packages/tg-hcq-amd/tools/gen_kfd_ioctl.py > ..."

@needs_header
@pytest.mark.skipif(not (cc := shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")), reason="no C compiler")
def test_layouts_match_the_c_compiler(tmp_path):
  structs = {n: c for n, c in vars(kfd).items() if isinstance(c, type) and issubclass(c, (ctypes.Structure, ctypes.Union)) and not n.startswith("_")}
  ioctls = sorted(n for n in vars(kfd) if n.startswith("AMDKFD_IOC_"))
  lines = ["#include <stdio.h>", "#include <stddef.h>", f'#include "{HEADER}"', "int main(void) {"]
  for n, c in structs.items():
    lines.append(f'printf("{n} %zu\\n", sizeof(struct {n}));')
    lines += [f'printf("{n}.{f[0]} %zu\\n", offsetof(struct {n}, {f[0]}));' for f in c._fields_ if f[0] not in getattr(c, "_anonymous_", ())]
  lines += [f'printf("{n} %lu\\n", (unsigned long){n});' for n in ioctls] + ["return 0; }"]
  (src := tmp_path / "layout.c").write_text("\n".join(lines))
  # kfd_ioctl.h includes <drm/drm.h> (libdrm-dev) only for the kernel's integer types and ioctl macros: stand in where it is missing
  (tmp_path / "inc/drm").mkdir(parents=True)
  (tmp_path / "inc/drm/drm.h").write_text("#include <linux/types.h>\n#include <linux/ioctl.h>\n")
  cflags = [] if os.path.exists("/usr/include/drm/drm.h") else ["-I", str(tmp_path / "inc")]
  subprocess.run([cc, *cflags, str(src), "-o", str(exe := tmp_path / "layout")], check=True, capture_output=True)
  want = dict(l.rsplit(" ", 1) for l in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
  got = {n: str(ctypes.sizeof(c)) for n, c in structs.items()}
  got |= {f"{n}.{f[0]}": str(getattr(c, f[0]).offset) for n, c in structs.items() for f in c._fields_ if f[0] not in getattr(c, "_anonymous_", ())}
  got |= {n: str(getattr(kfd, n)) for n in ioctls}
  assert got == want and len(ioctls) > 30

# *** KFDInterface (amd_kfd.py) end to end on the mock kernel driver, which checks its calls as KFD does ***

@pytest.fixture
def kfd_iface():
  from tinygrad.runtime.support.amd_mock import mock_kernel
  from tinygrad.runtime.support.amd_kfd import KFDInterface
  return KFDInterface(3, mock_kernel())

def test_host_visible_memory_is_the_same_pages_for_cpu_and_gpu(kfd_iface):
  buf = kfd_iface.alloc(0x2000, host_visible=True)
  buf.cpu_view()[100:104] = b"abcd"
  assert bytes(kfd_iface.os.system.mem.view(buf.va + 100, 4)) == b"abcd"
  kfd_iface.os.system.mem.view(buf.va, 2)[:] = b"zz"  # a GPU write the CPU sees
  assert bytes(buf.cpu_view()[:2]) == b"zz"
  kfd_iface.free(buf)
  from tinygrad.runtime.support.hcq_mock import MockGPUError
  with pytest.raises(MockGPUError): kfd_iface.os.system.mem.view(buf.va + 100, 4)

# node properties of known GPUs (sysfs names) and their CWSR sizes worked by hand from kfd_queue.c's formula (amd_kfd.py):
# (ctl_stack_size, cwsr_size, debug_memory_size), area
CWSR_BY_HAND = {
  # RX 7900 XTX, gfx1100: 96 CUs * 32 = 3072 waves; ctl ALIGN(40 + 3072*12 + 8 = 36912) = 0xa000; waves' data 96 * 0x75000 (VGPR 0x60000)
  # = 0x2be0000; debug 3072 * 32 = 0x18000; area 0x2bea000 + 0x18000
  "gfx1100": ({"simd_count": 192, "simd_per_cu": 2, "array_count": 12, "simd_arrays_per_engine": 2, "lds_size_in_kb": 64, "num_xcc": 1,
               "gfx_target_version": 110000}, (0xa000, 0x2bea000, 0x18000), 0x2c02000),
  # MI210, gfx90a: 104 CUs of 4 SIMDs; waves min(104 * 40 = 4160, 8 arrays / 1 per engine * 512 = 4096) = 4096; ctl ALIGN(40 + 4096*8 + 8)
  # = 0x9000; 104 * 0x95000 (VGPR 0x80000) = 0x3c88000; debug 4096 * 32 = 0x20000
  "gfx90a": ({"simd_count": 416, "simd_per_cu": 4, "array_count": 8, "simd_arrays_per_engine": 1, "lds_size_in_kb": 64, "num_xcc": 1,
              "gfx_target_version": 90010}, (0x9000, 0x3c91000, 0x20000), 0x3cb1000),
  # RX 6900 XT, gfx1030: 80 CUs * 32 = 2560 waves; ctl ALIGN(40 + 30720 + 8) = 0x8000, over gfx10's 0x7000; 80 * 0x55000 = 0x1a90000;
  # debug 2560 * 32 = 0x14000
  "gfx1030": ({"simd_count": 160, "simd_per_cu": 2, "array_count": 8, "simd_arrays_per_engine": 2, "lds_size_in_kb": 64, "num_xcc": 1,
               "gfx_target_version": 100300}, (0x7000, 0x1a97000, 0x14000), 0x1aab000),
  # MI300X, gfx942, 8 XCCs: per XCC 1216 / 4 / 8 = 38 CUs, min(38 * 40 = 1520, 32 / 1 * 512) = 1520 waves; ctl ALIGN(40 + 12160 + 8) =
  # 0x3000; 38 * 0x95000 = 0x161e000; debug 1520 * 32 = 0xbe00; area (0x1621000 + 0xbe00) * 8 = 0xb167000
  "gfx942": ({"simd_count": 1216, "simd_per_cu": 4, "array_count": 32, "simd_arrays_per_engine": 1, "lds_size_in_kb": 64, "num_xcc": 8,
              "gfx_target_version": 90402}, (0x3000, 0x1621000, 0xbe00), 0xb167000),
}

@pytest.mark.parametrize("gpu", list(CWSR_BY_HAND))
def test_context_save_area_sizes_match_the_kernels_formula_by_hand(gpu):
  from tinygrad.runtime.support import amd_kfd
  props, sizes, area = CWSR_BY_HAND[gpu]
  assert amd_kfd.kfd_cwsr_sizes(props) == sizes
  assert amd_kfd.cwsr_area(props) == (area, sizes[1], sizes[0])  # an older kernel: no sizes in sysfs, the formula's
  assert amd_kfd.cwsr_area({**props, "cwsr_size": sizes[1], "ctl_stack_size": sizes[0]}) == (area, sizes[1], sizes[0])

def test_compute_queue_gets_its_context_save_area_from_the_topology(kfd_iface, monkeypatch):
  from tinygrad.runtime.support import amd_kfd, amd_mock
  assert amd_kfd.cwsr_area(amd_kfd.gpu_nodes(kfd_iface.os)[0][1]) == (0x1d6000, 0x1d5000, 0x1000)  # the mock node's, by hand there
  assert amd_kfd.cwsr_area({**amd_mock.PROPS, "gfx_target_version": 80000}) == (0, 0, 0)  # a GPU without CWSR
  q = kfd_iface.create_queue("COMPUTE")
  assert q.kind == "COMPUTE" and q.queue_id >= 0
  monkeypatch.setattr(amd_mock, "SYSFS_CWSR", False)  # an older kernel: checks the sizes, prints none
  old = amd_kfd.KFDInterface(0, kfd_iface.os)
  assert "cwsr_size" not in old.props and old.create_queue("COMPUTE").kind == "COMPUTE"
  monkeypatch.setattr(amd_kfd, "cwsr_area", lambda props: (0, 0, 0))  # a queue without the area: KFD refuses it on this node
  with pytest.raises(OSError, match="context save area must be one mapping of 0x1d6000 bytes"): kfd_iface.create_queue("COMPUTE")
  monkeypatch.setattr(amd_kfd, "cwsr_area", lambda props: (0x1d7000, 0x1d5000, 0x1000))  # a page too many: not the kernel's size
  with pytest.raises(OSError, match="context save area must be one mapping of 0x1d6000 bytes"): kfd_iface.create_queue("COMPUTE")

def test_queue_runs_from_what_its_doorbell_said(kfd_iface):
  from tinygrad.runtime.support import amd_sdma as sdma
  q, sig = kfd_iface.create_queue("COPY"), kfd_iface.alloc(0x1000, host_visible=True)
  words = sdma.fence(sig.va, 9)
  q.ring.cpu_view().cast("I")[:len(words)] = __import__("array").array("I", words)
  q.wptr.cpu_view().cast("Q")[0] = 4 * len(words)
  kfd_iface.progress()
  assert sig.cpu_view().cast("I")[0] == 0  # the write pointer moved, no doorbell: the engine has not looked
  q.ring_doorbell(4 * len(words))
  assert sig.cpu_view().cast("I")[0] == 9 and q.read_ptr == 4 * len(words)

def test_kfd_version_and_call_order_are_checked(kfd_iface):
  from tinygrad.runtime.support.amd_mock import MockKFDKernel
  from tinygrad.runtime.support.amd_kfd import KFDInterface
  class OldKFD(MockKFDKernel):
    def _version(self, node, a): a.major_version, a.minor_version = 0, 9
  with pytest.raises(RuntimeError, match="KFD speaks ioctl version 0.9, tg 1.x"): KFDInterface(0, OldKFD())
  k, fd = kfd_iface.os, kfd_iface.os.open("/dev/kfd")
  args = kfd.kfd_ioctl_alloc_memory_of_gpu_args(va_addr=0x10000, size=0x1000, gpu_id=kfd_iface.gpu_id, flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT)
  with pytest.raises(OSError, match="before ACQUIRE_VM"): k.ioctl(fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, args)
  with pytest.raises(OSError, match="does not describe"): k.ioctl(fd, kfd.AMDKFD_IOC_ACQUIRE_VM, args)

def test_vram_running_out_is_enomem_and_leaves_no_reserved_range(monkeypatch):
  # KFD answers ENOMEM (an OSError, which the allocator answers by waiting for deferred frees); the address range reserved for the
  # allocation goes back to the host
  import errno
  from tinygrad.runtime.support import amd_mock
  from tinygrad.runtime.support.amd_kfd import KFDInterface
  kernel = amd_mock.mock_kernel()
  iface = KFDInterface(3, kernel)
  used = sum(b["size"] for b in kernel.allocs.values() if b["gpu"].gpu_id == iface.gpu_id and "memfd" not in b)
  monkeypatch.setattr(amd_mock, "VRAM_BYTES", used + (1 << 20))
  unmapped, real = [], kernel.munmap
  monkeypatch.setattr(kernel, "munmap", lambda addr, size: (unmapped.append(size), real(addr, size)))
  with pytest.raises(OSError) as e: iface.alloc(2 << 20)
  assert e.value.errno == errno.ENOMEM and unmapped == [2 << 20]
  iface.free(iface.alloc(1 << 20))
