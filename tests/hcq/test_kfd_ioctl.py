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
