"""NV kernels from cubins on the mock driver: a checked-in sm_90 cubin (tests/renderers/cubins) launched with the UOps of the same kernel,
the launch's QMD words from the cubin's facts (byte-exact, QMD V03_00 bit positions), the mock refusing a launch whose code or QMD
does not match the cubin, the device without ptxas (memory and signals work, compiling says why), and with ptxas DEV=NV:PTX end to
end."""
import os, pathlib, sys
import numpy as np, pytest
from tinygrad import Tensor, Device
from tinygrad.device import CompileError, DeviceError
from tinygrad.codegen import get_program
from tinygrad.runtime import cuda_toolchain
from tinygrad.runtime.cubin import read_cubin
from tinygrad.runtime.support.code_object import CodeObject
from tinygrad.runtime.support.hcq_mock import MockGPUError
from tinygrad.runtime.support import nv_methods as nv
from tinygrad.runtime.support.nv_select import launch_qmd, program_qmd_fields
from tinygrad.runtime.support.nv_program import program_meta
from tinygrad.runtime.ops_nv import NVDevice, NVEmulatedRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "renderers"))
from gpu_kernels import local_sum_ast  # noqa: E402  (the kernel the checked-in cubin was compiled from)
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's helpers are not on sys.path by themselves
from hcq_checks import copy_works  # noqa: E402

CUBIN = (pathlib.Path(__file__).parents[1] / "renderers" / "cubins" / "local_sum.sm_90.cubin").read_bytes()
LOCAL_SUM_PARAMS = [("u64", "data0"), ("u64", "data1")]

def local_sum_object(**meta_changes) -> bytes:
  k = read_cubin(CUBIN, "local_sum")
  spec = get_program(local_sum_ast(), NVEmulatedRenderer())
  return CodeObject("local_sum", k.text, spec.src.encode(), {**program_meta(k, LOCAL_SUM_PARAMS), **meta_changes}).pack()

def run_local_sum(dev, lib:bytes, x:np.ndarray):
  prg = dev.runtime("local_sum", lib)
  out, inp = dev.iface.alloc(32, host_visible=True), dev.iface.alloc(128, host_visible=True)
  inp.cpu_view()[:128] = x.tobytes()
  prg(out, inp, global_size=(8, 1, 1), local_size=(4, 1, 1), wait=True)
  return prg, np.frombuffer(bytes(out.cpu_view()[:32]), np.float32)

def test_checked_in_cubin_launches_with_its_facts():
  # the parameters go at 0x210 of constant buffer 0 (sm_90), the QMD carries 16 registers, 1040 bytes of shared memory, 1 barrier; the
  # mock checks each against the code object and reads the parameters there
  x = np.arange(32, dtype=np.float32)
  prg, out = run_local_sum(Device["NV"], local_sum_object(), x)
  np.testing.assert_array_equal(out, x.reshape(8, 4).sum(1))
  assert prg.args_offset == 0x100 + 0x210
  # SASS_VERSION 0x90 for the sm_90 code
  assert Device["NV"].select_ctx.programs[prg.addr] == program_qmd_fields(registers=16, shared=1040, barriers=1, sass_version=0x90)
  assert prg.mem.size >= len(local_sum_object()) + 0x1000  # 4 KiB stay mapped past the code object for the instruction prefetch

def test_launch_qmd_words_from_a_cubin():
  # QMD V03_00 (clc9c0qmd.h): SHARED_MEMORY_SIZE MW(561:544) word 17 bits 17:0 (1040 rounded up to 128: 1152), MIN/MAX_SM_CONFIG
  # MW(567:562)/MW(574:569) 8 KiB (3) and 228 KiB (58); REGISTER_COUNT_V MW(656:648) word 20 bits 16:8, TARGET_SM_CONFIG MW(662:657)
  # bits 22:17 (1152 bytes fit the 8 KiB carve-out: 3); BARRIER_COUNT MW(767:763) word 23 bits 31:27; CONSTANT_BUFFER_ADDR_LOWER(0)
  # word 32 = kernargs + 0x100 (after the QMD); PROGRAM_ADDRESS_LOWER/UPPER words 48, 49
  k = read_cubin(CUBIN, "local_sum")
  w = launch_qmd(program_qmd_fields(registers=k.registers, shared=k.shared, barriers=k.barriers), 0x7F_0000_2100, 0x7F_0000_3000, (8, 1, 1), (4, 1, 1))
  assert (w[17], w[20], w[23]) == (1152 | 3 << 18 | 58 << 25, 1 | 16 << 8 | 3 << 17, 1 << 27)
  assert (w[32], w[48], w[49]) == (0x3100, 0x2100, 0x7F)
  assert launch_qmd(program_qmd_fields(registers=8, barriers=0), 0, 0, (1, 1, 1), (1, 1, 1))[23] == 0
  assert nv.qmd_field(w, "barrier_count") == 1 and nv.qmd_field(w, "register_count_v") == 16

def test_mock_refuses_code_or_qmd_that_is_not_the_cubins():
  dev = NVDevice("NV:1")
  with pytest.raises(MockGPUError, match="not the cubin's .text"): run_local_sum(dev, local_sum_object(crc=1), np.zeros(32, np.float32))
  dev = NVDevice("NV:2")
  prg = dev.runtime("local_sum", local_sum_object())
  dev.select_ctx.programs[prg.addr]["register_count_v"] = 99  # as if the device had written the wrong count
  with pytest.raises(MockGPUError, match="REGISTER_COUNT_V is 99, the cubin needs 16"):
    prg(dev.iface.alloc(32, host_visible=True), dev.iface.alloc(128, host_visible=True), global_size=(8, 1, 1), local_size=(4, 1, 1), wait=True)

def test_parameter_layout_must_match_what_the_launch_writes():
  with pytest.raises(CompileError, match="the launch writes them at"): program_meta(read_cubin(CUBIN, "local_sum"), [("s32", "n"), ("u64", "data0")])

def test_without_ptxas_memory_and_signals_work_and_compiles_say_why(monkeypatch):
  # a GPU without ptxas (simulated: no tool found, and no renderer usable, as on hardware where EMU is not offered)
  from tinygrad.runtime import hooks_nv
  monkeypatch.setattr(cuda_toolchain, "find_tool", lambda name: None)
  ok, reason = hooks_nv.ptx_probe()
  assert not ok and reason.startswith("NV kernels unavailable (memory, copies and signals still work): ptxas not found")
  def no_renderer(name): raise DeviceError(f"device NV has no usable renderer: {reason}")
  monkeypatch.setattr(type(Device), "renderer_for", lambda self, name: no_renderer(name))
  dev = NVDevice("NV:3")
  copy_works(dev)
  with pytest.raises(CompileError, match="NV kernels unavailable.*ptxas not found"): dev.compiler.compile("{}")
  with pytest.raises(RuntimeError, match="no machine code"):  # and a mock-only program is no way around it on hardware
    monkeypatch.setattr(dev.iface, "is_mock", False)
    dev.runtime("k", CodeObject("k", b"", b"{}").pack())

@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None, reason="ptxas is not installed (the checked-in cubin tests above still run)")
def test_ptx_renderer_end_to_end_on_the_mock():
  from tinygrad.engine.realize import _runtimes
  a = np.arange(24, dtype=np.float32).reshape(4, 6)
  t = Tensor(a, device="NV:PTX:sm_90")
  np.testing.assert_allclose((t @ t.T).relu().sum(1).numpy(), np.maximum(a @ a.T, 0).sum(1), rtol=1e-6)
  progs = [p for (_, dev), p in _runtimes.items() if dev == "NV:PTX:sm_90"]
  co = CodeObject.unpack(progs[-1].mem.cpu_view()[:CodeObject.size_at(progs[-1].mem.cpu_view()[:256])])
  assert co.machine_code and co.uops_json and co.meta["sm"] == 90 and co.meta["cb0"] == 0x210 and co.meta["regs"] > 0

@pytest.mark.parametrize("arch, sm", [((0x170, 0), 80), ((0x170, 2), 86), ((0x170, 0xB), 87), ((0x190, 4), 89), ((0x180, 0), 90),
                                      ((0x1B0, 2), 120), ((0x120, 0), None)])
def test_device_sm_comes_from_the_gpu(monkeypatch, arch, sm):
  # NV2080_CTRL_MC_ARCH_INFO_ARCHITECTURE GA100/AD100/GH100/GB200 (ctrl2080mc.h) with their implementations -> CUDA's compute capability
  from tinygrad.runtime.support import nv_mock, nv_rm_abi as rm
  monkeypatch.setattr(nv_mock, "ARCH", arch)
  monkeypatch.setattr(nv_mock, "engine_classes", lambda: nv_mock.ENGINE_CLASSES[rm.ARCH_GA100])  # channels tg drives, whatever the GPU
  if sm is None:
    with pytest.raises(RuntimeError, match="architecture 0x120 .* DEV=NV:PTX:sm_90"): NVDevice("NV:1")
    assert NVDevice("NV:1:EMU:sm_90").gpu_sm is None  # a named SM needs no lookup
  else: assert NVDevice("NV:1").gpu_sm == sm and NVDevice("NV:1").arch == f"sm_{sm}"

@pytest.mark.parametrize("arch, classes", [((0x170, 0), (0xC56F, 0xC6C0, 0xC6B5, 0xC361)), ((0x170, 2), (0xC56F, 0xC7C0, 0xC7B5, 0xC361)),
                                           ((0x190, 4), (0xC56F, 0xC9C0, 0xC7B5, 0xC361)), ((0x180, 0), (0xC86F, 0xCBC0, 0xC8B5, 0xC661))])
def test_channels_bind_the_gpus_own_classes(monkeypatch, arch, classes):
  # (GPFIFO channel, compute, copy, usermode) from the class list RM reports: GA100 AMPERE_COMPUTE_A + AMPERE_DMA_COPY_A, GA10x
  # AMPERE_COMPUTE_B + AMPERE_DMA_COPY_B, AD10x ADA_COMPUTE_A + AMPERE_DMA_COPY_B, GH100 all Hopper's; the mock offers only those and
  # refuses any other at RM_ALLOC. A launch and a copy run on each
  from tinygrad.runtime.support import nv_mock
  monkeypatch.setattr(nv_mock, "ARCH", arch)
  dev = NVDevice("NV:1:EMU")
  assert (dev.iface.gpfifo_class, dev.iface.channel_classes["COMPUTE"], dev.iface.channel_classes["COPY"]) == classes[:3]
  assert {o.cls for o in dev.iface.os.objects.values() if o.cls in nv_mock.USERMODE_CLASSES} >= {classes[3]}
  x = np.arange(32, dtype=np.float32)
  spec = get_program(local_sum_ast(), NVEmulatedRenderer())
  prg = dev.runtime("local_sum", CodeObject("local_sum", b"", spec.src.encode()).pack())
  inp, out = dev.allocator.alloc(128), dev.allocator.alloc(32)
  dev.allocator._copyin(inp, memoryview(x).cast("B"))
  prg(out, inp, global_size=(8, 1, 1), local_size=(4, 1, 1))
  got = np.empty(8, np.float32)
  dev.allocator._copyout(memoryview(got).cast("B"), out)
  np.testing.assert_array_equal(got, x.reshape(8, 4).sum(1))

def test_a_gpu_without_the_classes_tg_drives_is_refused_naming_its_classes(monkeypatch):
  from tinygrad.runtime.support import nv_mock
  monkeypatch.setattr(nv_mock, "ARCH", (0x1B0, 2))  # GB20x: none of its classes is in the mock's table, as none is in tg's
  with pytest.raises(RuntimeError, match=r"none of the channel, compute and copy class sets tg drives .* its engine classes: \[\]"):
    NVDevice("NV:1")

def test_machine_code_for_another_sm_is_refused_on_hardware(monkeypatch):
  from tinygrad.runtime.support.nv_rm import sass_runs_on
  assert sass_runs_on(80, 86) and sass_runs_on(86, 86) and not sass_runs_on(86, 80) and not sass_runs_on(80, 90) and not sass_runs_on(90, 100)
  dev = NVDevice("NV:1")  # the mock reports sm_86; the checked-in cubin is sm_90
  monkeypatch.setattr(dev.iface, "is_mock", False)
  with pytest.raises(RuntimeError, match="machine code for sm_90, which does not run on this GPU \\(sm_86\\)"): dev.runtime("local_sum", local_sum_object())

@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None, reason="ptxas is not installed")
def test_ptx_compiles_for_the_gpus_sm_unless_named():
  assert NVDevice("NV:1:PTX").compiler.cubin.arch == "sm_86"  # the mock GPUs report GA102
  assert NVDevice("NV:1:PTX:sm_90").compiler.cubin.arch == "sm_90"

# *** constant buffer 0 below the parameters: the words the CUDA driver writes, which ptxas-made code reads ***

def test_constant_buffer_0_driver_words_at_the_offsets_ptxas_reads():
  # by hand from nvdisasm's listing of ptxas 13.0 output (sm_86 and sm_90 alike): MOV R9, c[0x0][0x4] for %ntid.y, c[0x0][0xc] for
  # %nctaid.x, c[0x0][0x18]/0x1c for cvta.shared (sm_86), c[0x0][0x20]/0x24 for cvta.local; the rest up to the parameters is zero
  from tinygrad.runtime.support.nv_select import driver_words, CB0_LOCAL_WINDOW
  words = driver_words(0x160, (7, 8, 9), (32, 2, 1))
  assert words[:0x28] == bytes.fromhex("20000000 02000000 01000000 07000000 08000000 09000000 000000fe00000000 000000ff00000000")
  assert CB0_LOCAL_WINDOW == 0x20 and words[0x28:] == bytes(0x160 - 0x28)
  # the channel places the windows there: SET_SHADER_SHARED_MEMORY_WINDOW_A (0x2a0) and SET_SHADER_LOCAL_MEMORY_WINDOW_A (0x7b0) with
  # their B words, incrementing methods of 2 words on subchannel 1 (headers 0x200220a8 and 0x200221ec by hand)
  assert nv.memory_windows() == [0x200220A8, 0, 0xFE000000, 0x200221EC, 0, 0xFF000000]

def test_a_launch_writes_its_grid_into_constant_buffer_0_and_the_mock_checks_it(monkeypatch):
  from tinygrad.runtime import ops_nv
  x = np.arange(32, dtype=np.float32)
  _, out = run_local_sum(Device["NV"], local_sum_object(), x)  # the mock compares the words with the QMD's grid and the channel's windows
  np.testing.assert_allclose(out, x.reshape(8, 4).sum(1))
  real = ops_nv.driver_words
  monkeypatch.setattr(ops_nv, "driver_words", lambda size, g, l: real(size, g, (l[1], l[0], l[2])))  # the block's x and y swapped
  with pytest.raises(MockGPUError, match=r"constant buffer 0 at 0x[0-9a-f]+: %ntid is \(1, 4, 1\), the launch's is \(4, 1, 1\)"):
    run_local_sum(NVDevice("NV:1"), local_sum_object(), x)

NVDISASM = os.environ.get("NVDISASM") or cuda_toolchain.find_tool("nvdisasm")
READS = {"mov.u32 %r1, %ntid.y;": "u32", "mov.u32 %r1, %nctaid.z;": "u32", "mov.u64 %rd2, sh; cvta.shared.u64 %rd1, %rd2;": "u64",
         "mov.u64 %rd2, lc; cvta.local.u64 %rd1, %rd2;": "u64"}

@pytest.mark.slow
@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None or NVDISASM is None, reason="needs ptxas and nvdisasm (NVDISASM=path)")
@pytest.mark.parametrize("sm", [86, 90])
def test_driver_word_offsets_are_where_ptxas_reads_them(sm, tmp_path):
  # each read alone in a kernel: the constant-bank offsets its code reads, less the stack pointer (0x28), the memory descriptor and the
  # parameters, are the table's
  import re, subprocess
  from tinygrad.runtime.support.nv_select import CB0_NTID, CB0_NCTAID, CB0_SHARED_WINDOW, CB0_LOCAL_WINDOW
  want = {"%ntid.y": {CB0_NTID + 4}, "%nctaid.z": {CB0_NCTAID + 8}, "cvta.shared": {CB0_SHARED_WINDOW, CB0_SHARED_WINDOW + 4} if sm < 90 else set(),
          "cvta.local": {CB0_LOCAL_WINDOW, CB0_LOCAL_WINDOW + 4}}
  ignore = {0x28, 0x118, 0x11c, 0x160, 0x164} if sm < 90 else {0x28, 0x208, 0x20c, 0x210, 0x214}
  for (read, ty), key in zip(READS.items(), want):
    ptx = (f".version 8.0\n.target sm_{sm}\n.address_size 64\n.visible .entry k(.param .u64 out)\n{{\n.reg .u32 %r<2>; .reg .u64 %rd<3>;\n"
           f".shared .align 8 .b64 sh[4];\n.local .align 8 .b64 lc[4];\nld.param.u64 %rd0, [out];\n{read}\n"
           f"st.global.{ty} [%rd0], {'%r1' if ty == 'u32' else '%rd1'};\nret;\n}}\n")
    (tmp_path / "k.ptx").write_text(ptx)
    subprocess.run([cuda_toolchain.find_tool("ptxas"), f"-arch=sm_{sm}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")], check=True)
    listing = subprocess.run([NVDISASM, "-c", str(tmp_path / "k.cubin")], check=True, capture_output=True, text=True).stdout
    reads = set()
    for line in listing.splitlines():  # a 64-bit load (LDC.64, ULDC.64) reads the word after its offset too
      for off in re.findall(r"c\[0x0\]\[(0x[0-9a-f]+)\]", line): reads |= {int(off, 16)} | ({int(off, 16) + 4} if ".64 " in line else set())
    assert reads - ignore == want[key], (read, listing)
