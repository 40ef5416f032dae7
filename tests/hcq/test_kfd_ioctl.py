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

def test_compute_queue_gets_its_context_save_area_from_the_topology(kfd_iface, monkeypatch):
  from tinygrad.runtime.support import amd_kfd
  from tinygrad.runtime.support.amd_mock import PROPS
  # cwsr_size 0x3000 + 8 SIMDs * 16 waves * 32 debugger bytes (0x1000), one XCC: 0x4000 bytes; ctl_stack_size from the node
  assert amd_kfd.cwsr_area(PROPS) == (0x4000, 0x3000, 0x1000)
  assert amd_kfd.cwsr_area({"simd_count": 8}) == (0, 0, 0)  # a kernel that reports no sizes
  q = kfd_iface.create_queue("COMPUTE")
  assert q.kind == "COMPUTE" and q.queue_id >= 0
  monkeypatch.setattr(amd_kfd, "cwsr_area", lambda props: (0, 0, 0))  # a queue without the area: KFD refuses it on this node
  with pytest.raises(OSError, match="context save area must be 16384 mapped bytes"): kfd_iface.create_queue("COMPUTE")

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
