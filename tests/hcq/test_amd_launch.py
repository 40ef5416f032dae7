"""The AMD dispatch as the HSA ABI asks (LLVM AMDGPUUsage): COMPUTE_PGM_RSRC3 from the kernel descriptor, the user SGPRs the
descriptor enables (the kernarg pointer after a zero private segment buffer on gfx10.3, LLVM's padding on gfx11), the wave size, and
the hidden arguments code object v5 declares in its metadata. The mock GPU holds each dispatch to the descriptor and metadata its
code object recorded, so a dispatch that would misbehave on hardware faults here."""
import pathlib, struct, sys
import numpy as np, pytest
from tinygrad import Tensor, Device
from tinygrad.codegen import get_program
from tinygrad.runtime.elf import ElfError
from tinygrad.runtime.amdgpu_metadata import unpack_msgpack, kernel_args
from tinygrad.runtime.compiler_amdgpu import AMDGPUCompiler, read_code_object
from tinygrad.runtime.support.code_object import CodeObject
from tinygrad.runtime.support.hcq import DeviceHang
from tinygrad.runtime.support.amd_launch import program_regs, check_explicit_args, rsrc2_with_lds
from tinygrad.runtime.support.amd_select import ProgramRegs
from tinygrad.runtime.ops_amd import AMDEmulatedRenderer, AMDHCQCompiler, gfx_arch
sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "renderers"))
from gpu_kernels import local_sum_ast  # noqa: E402

# a kernel reading the hidden block count and group size through the implicit argument pointer: LLVM then declares them
IMPLICIT_IR = '''target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %a) {
  %ia = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %bc = load i32, ptr addrspace(4) %ia
  %gp = getelementptr i8, ptr addrspace(4) %ia, i64 12
  %gs = load i16, ptr addrspace(4) %gp
  %s = add i32 %bc, 1
  store i32 %s, ptr addrspace(1) %a
  ret void
}
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
'''

def test_msgpack_reader_against_hand_encoded_bytes():
  # fixmap{fixstr "a": [fixint 1, -1 (0xff), uint16 0x1234 (0xcd), str8 "xy" (0xd9), true, nil]}
  assert unpack_msgpack(b"\x81\xa1a\x96\x01\xff\xcd\x12\x34\xd9\x02xy\xc3\xc0") == {"a": [1, -1, 0x1234, "xy", True, None]}
  with pytest.raises(ElfError, match="run past its end"): unpack_msgpack(b"\xd9\x10ab")
  with pytest.raises(ElfError, match="cannot fit"): unpack_msgpack(b"\xdd\xff\xff\xff\xff")  # array32 of 4G entries: refused, not allocated
  with pytest.raises(ElfError, match="nests deeper"): unpack_msgpack(b"\x91" * 40 + b"\x00")

def test_hidden_arguments_are_read_at_the_spec_offsets():
  # AMDGPUUsage "Code Object V5 Metadata": the hidden arguments follow the explicit ones (one 8-byte pointer here) at fixed offsets:
  # block_count_x/y/z +0/+4/+8 (4 bytes), group_size_x/y/z +12/+14/+16 and remainder_x/y/z +18/+20/+22 (2 bytes), global_offset_x/y/z
  # +40/+48/+56 (8 bytes), grid_dims +64 (2 bytes); the kernarg segment is the explicit 8 bytes and the 256 implicit ones
  co = read_code_object(AMDGPUCompiler("gfx1100").compile(IMPLICIT_IR), "k")
  args = kernel_args(co.elf, "k")
  assert args[0] == ("global_buffer", 0, 8) and co.kd.kernarg_size == 8 + 256
  hidden = {k: (off - 8, size) for k, off, size in args[1:]}
  assert hidden["hidden_block_count_x"] == (0, 4) and hidden["hidden_block_count_z"] == (8, 4)
  assert hidden["hidden_group_size_x"] == (12, 2) and hidden["hidden_remainder_z"] == (22, 2)
  assert hidden["hidden_global_offset_x"] == (40, 8) and hidden["hidden_grid_dims"] == (64, 2)
  with pytest.raises(ElfError, match="describes no kernel 'nope'"): kernel_args(co.elf, "nope")

def test_compiler_records_hidden_arguments_and_the_renderers_kernels_declare_none():
  import json
  lib = AMDHCQCompiler("gfx1100").compile(json.dumps({"name": "k", "llvm": IMPLICIT_IR, "emu": "{}"}))
  meta = CodeObject.unpack(lib).meta
  assert ["hidden_block_count_x", 8, 4] in meta["hidden"] and meta["kernarg_size"] == 264 and meta["arch"] == "gfx1100"
  # the AMDGPU renderer's kernels read their ids from intrinsics, never the implicit arguments: LLVM declares no hidden ones
  a = Tensor(np.arange(12, dtype=np.float32), device="AMD:LLVM")
  assert (a.reshape(3, 4).sum(1) * 2).tolist() == [12.0, 44.0, 76.0]
  from tinygrad.engine.realize import _runtimes
  assert all(p.hidden == [] for (_, d), p in _runtimes.items() if d == "AMD:LLVM")

def test_a_kernel_referring_to_data_beside_its_code_is_refused_at_compile():
  # a constant table LLVM puts in .rodata, addressed from the code through relocations: the device loads only the code, so it would
  # read whatever lies there
  import json
  from tinygrad.device import CompileError
  ir = IMPLICIT_IR.replace("define amdgpu_kernel", "@tbl = internal addrspace(4) constant [4 x i32] [i32 1, i32 2, i32 3, i32 5]\n"
                           "define amdgpu_kernel").replace("%s = add i32 %bc, 1", "%tp = getelementptr [4 x i32], ptr addrspace(4) @tbl, "
                           "i32 0, i32 %bc\n  %s = load i32, ptr addrspace(4) %tp")
  with pytest.raises(CompileError, match=r"kernel k refers to data outside its code \(\.text\+0x[0-9a-f]+ against "):
    AMDHCQCompiler("gfx1100").compile(json.dumps({"name": "k", "llvm": ir, "emu": "{}"}))

def test_a_kernel_with_preloaded_arguments_is_refused():
  # gfx942 preloads `inreg` kernel arguments into user SGPRs (descriptor byte 58, kernarg_preload: 3 SGPRs from offset 0 here, RSRC2's
  # USER_SGPR 2 + 3); the CP of an AQL queue fills them, a PM4 dispatch cannot
  import json
  ir = IMPLICIT_IR.split("define")[0] + \
    "define amdgpu_kernel void @k(ptr addrspace(1) inreg %a, i32 inreg %n) {\n  store i32 %n, ptr addrspace(1) %a\n  ret void\n}\n" + \
    "!llvm.module.flags = !{!0}\n!0 = !{i32 1, !\"amdhsa_code_object_version\", i32 500}\n"
  lib = AMDHCQCompiler("gfx942").compile(json.dumps({"name": "k", "llvm": ir, "emu": "{}"}))
  meta = CodeObject.unpack(lib).meta
  assert meta["kernarg_preload"] == 3 and meta["rsrc2"] >> 1 & 0x1f == 5
  with pytest.raises(RuntimeError, match=r"kernel k preloads 3 SGPRs of kernel arguments \(kernarg_preload 0x3\)"):
    Device["AMD"].runtime("k", lib)

def test_explicit_arguments_must_be_where_the_dispatch_writes_them():
  assert check_explicit_args([("global_buffer", 0, 8), ("global_buffer", 8, 8), ("by_value", 16, 4), ("hidden_block_count_x", 24, 4)]) is None
  assert "at offset 16" in check_explicit_args([("global_buffer", 0, 8), ("by_value", 8, 4), ("global_buffer", 16, 8)])
  assert "at offset 16" in check_explicit_args([("global_buffer", 0, 8), ("global_buffer", 16, 8)])  # padding LLVM inserted

@pytest.mark.parametrize("props, user, regs", [
  (0x408, 2, ProgramRegs(1, 4, 0x50, 2, 0, True)),     # gfx12: the kernarg pointer alone in s0-s1, wave32
  (0x408, 15, ProgramRegs(1, 30, 0x50, 15, 0, True)),  # gfx1100: padded to 15 user SGPRs (UserSGPRInit16Bug), written zero
  (0x409, 6, ProgramRegs(1, 12, 0x50, 6, 4, True)),    # gfx1030: private segment buffer (zero: no scratch) in s0-s3, kernargs s4-s5
  (0x008, 2, ProgramRegs(1, 4, 0x50, 2, 0, False)),    # gfx942: wave64
])
def test_user_sgprs_and_wave_size_from_the_descriptor(props, user, regs):
  assert program_regs({"rsrc1": 1, "rsrc2": user << 1, "rsrc3": 0x50, "props": props}) == regs

def test_lds_size_is_programmed_from_the_group_segment_size():
  # HSA descriptors leave COMPUTE_PGM_RSRC2.LDS_SIZE (bits 23:15) zero for the CP to fill from the AQL packet; a PM4 dispatch sets it, in
  # granules of 128 dwords (AMDGPUUsage GRANULATED_LDS_SIZE, gfx7-gfx12.0): 1 byte -> 1, 512 -> 1, 513 -> 2, 64 KiB -> 128
  assert [rsrc2_with_lds(0x84, n) >> 15 for n in (0, 1, 512, 513, 1024, 64 << 10)] == [0, 1, 1, 2, 2, 128]
  assert rsrc2_with_lds(0x84, 1024) & 0x7fff == 0x84
  assert program_regs({"rsrc1": 1, "rsrc2": 2 << 1, "props": 0x408, "group_segment_size": 4096}).rsrc2 == 2 << 1 | 8 << 15
  with pytest.raises(RuntimeError, match="more than a work group has"): rsrc2_with_lds(0, (64 << 10) + 1)
  with pytest.raises(RuntimeError, match="LDS_SIZE set"): rsrc2_with_lds(3 << 15, 0)

@pytest.mark.parametrize("props, user, why", [(0x40a, 4, "expects a dispatch pointer"), (0x40c, 4, "expects a queue pointer"),
                                              (0x400, 0, "takes no kernarg segment pointer"), (0x418, 4, "expects a dispatch id"),
                                              (0xc08, 2, "uses a dynamic stack"), (0x408, 1, "has COMPUTE_PGM_RSRC2.USER_SGPR 1, but .* enable 2")])
def test_a_kernel_the_dispatch_cannot_start_is_refused_at_load(props, user, why):
  with pytest.raises(RuntimeError, match=f"kernel k {why}"):
    Device["AMD"].runtime("k", CodeObject("k", b"\x00" * 16, b"{}", {"rsrc1": 1, "rsrc2": user << 1, "props": props}).pack())

def local_sum(meta:dict, dev=None):
  """the local_sum kernel (8 groups of 4) as emulator UOps, launched with a descriptor's facts; the mock checks the dispatch"""
  dev = dev or Device["AMD"]
  spec = get_program(local_sum_ast(), AMDEmulatedRenderer())
  prg = dev.runtime("local_sum", CodeObject("local_sum", b"\x00" * 256, spec.src.encode(), meta).pack())
  x = np.arange(32, dtype=np.float32)
  out, inp = dev.iface.alloc(32, host_visible=True), dev.iface.alloc(128, host_visible=True)
  inp.cpu_view()[:128] = x.tobytes()
  prg(out, inp, global_size=(8, 1, 1), local_size=(4, 1, 1), wait=True)
  np.testing.assert_array_equal(np.frombuffer(bytes(out.cpu_view()[:32]), np.float32), x.reshape(8, 4).sum(1))
  return prg

V5_HIDDEN = [["hidden_block_count_x", 16, 4], ["hidden_block_count_y", 20, 4], ["hidden_block_count_z", 24, 4],
             ["hidden_group_size_x", 28, 2], ["hidden_group_size_y", 30, 2], ["hidden_group_size_z", 32, 2], ["hidden_remainder_x", 34, 2],
             ["hidden_global_offset_x", 56, 8], ["hidden_grid_dims", 80, 2], ["hidden_none", 88, 8], ["hidden_dynamic_lds_size", 136, 4]]

def test_hidden_arguments_are_filled_for_the_dispatch():
  # gfx1030-like: kernargs in s4-s5, RSRC3 programmed; the mock reads the hidden arguments and compares them with the dispatch
  meta = {"rsrc1": 0x11, "rsrc2": 6 << 1 | 1 << 7, "rsrc3": 0x50, "props": 0x409, "kernarg_size": 16 + 256, "hidden": V5_HIDDEN}
  prg = local_sum(meta)
  assert prg.kernargs_size(2, 0) == 272
  assert Device["AMD"].select_ctx.programs[prg.addr] == ProgramRegs(0x11, 6 << 1 | 1 << 7, 0x50, 6, 4, True)

def test_mock_faults_a_dispatch_whose_hidden_arguments_or_rsrc3_are_wrong(monkeypatch):
  from tinygrad.runtime.ops_amd import AMDDevice
  from tinygrad.runtime.support import amd_pm4
  meta = {"rsrc1": 0x11, "rsrc2": 2 << 1, "rsrc3": 0x50, "props": 0x408, "kernarg_size": 16 + 256, "hidden": V5_HIDDEN}
  monkeypatch.setattr("tinygrad.runtime.ops_amd.fill_hidden", lambda *a: None)
  with pytest.raises((DeviceHang, RuntimeError), match="hidden argument hidden_block_count_x at kernarg offset 16 is 0, the dispatch's is 8"):
    local_sum(meta, AMDDevice("AMD:1"))
  monkeypatch.undo()
  real = amd_pm4.dispatch
  monkeypatch.setattr(amd_pm4, "dispatch", lambda *a: real(*a[:6], 0, *a[7:]))  # a dispatch that leaves RSRC3 zero
  with pytest.raises((DeviceHang, RuntimeError), match="COMPUTE_PGM_RSRC3 is 0x0, the descriptor's 0x50"): local_sum(meta, AMDDevice("AMD:2"))

def test_a_kernel_needing_a_hidden_argument_without_a_value_here_is_refused():
  meta = {"rsrc1": 1, "rsrc2": 4, "props": 0x408, "hidden": [["hidden_hostcall_buffer", 96, 8], ["hidden_block_count_x", 16, 4]]}
  with pytest.raises(RuntimeError, match=r"declares hidden arguments \['hostcall_buffer \(8 bytes\)'\]"):
    Device["AMD"].runtime("k", CodeObject("k", b"\x00" * 16, b"{}", meta).pack())

@pytest.mark.parametrize("arch", ["gfx1030", "gfx942"])
def test_llvm_kernels_for_other_targets_dispatch_as_their_descriptors_say(arch):
  # real LLVM code objects: gfx1030 takes a private segment buffer before its kernargs, gfx942 runs wave64 with its accumulation offset
  # in RSRC3; the mock checks each dispatch's RSRC1-3, user SGPRs and DISPATCH_INITIATOR against the descriptor
  a = np.arange(64, dtype=np.float32)
  t = Tensor(a, device=f"AMD:3:LLVM:{arch}")
  np.testing.assert_allclose(((t.reshape(8, 8) @ t.reshape(8, 8)).relu().sum(1)).numpy(), np.maximum(a.reshape(8, 8) @ a.reshape(8, 8), 0).sum(1))

@pytest.mark.parametrize("gfxv, arch", [(110000, "gfx1100"), (90010, "gfx90a"), (90402, "gfx942"), (100300, "gfx1030"), (120001, "gfx1201")])
def test_the_llvm_target_comes_from_the_gpus_gfx_target_version(gfxv, arch):
  assert gfx_arch(gfxv) == arch

def test_the_device_compiles_for_its_gpu_and_refuses_gfx9_on_hardware(monkeypatch):
  from tinygrad.runtime.support import amd_mock
  from tinygrad.runtime.ops_amd import AMDDevice
  monkeypatch.setitem(amd_mock.PROPS, "gfx_target_version", 100300)
  dev = AMDDevice("AMD:2:LLVM")
  assert dev.arch == "gfx1030" and dev.compiler.amdgpu.arch == "gfx1030"
  assert AMDDevice("AMD:2:LLVM:gfx1100").compiler.amdgpu.arch == "gfx1100"  # a target the device string names wins
  # a gfx9 GPU (gfx90a) on hardware: refused at open, naming why (the mock runs any target: its packets are the encoders' own)
  monkeypatch.setitem(amd_mock.PROPS, "gfx_target_version", 90010)
  monkeypatch.setattr(amd_mock.MockKFDKernel, "is_mock", False)
  with pytest.raises(RuntimeError, match="AMD:2: gfx90a is a gfx9 GPU; tg's PM4 packets are gfx10\\+'s"): AMDDevice("AMD:2:LLVM")

def test_machine_code_for_another_target_is_refused_on_hardware(monkeypatch):
  from tinygrad.runtime.ops_amd import AMDDevice
  dev = AMDDevice("AMD:2")
  monkeypatch.setattr(dev.iface, "is_mock", False)
  meta = {"rsrc1": 1, "rsrc2": 4, "props": 0x408, "arch": "gfx1030"}
  with pytest.raises(RuntimeError, match="kernel k is machine code for gfx1030, and this GPU is gfx1100"):
    dev.runtime("k", CodeObject("k", b"\x00" * 16, b"{}", meta).pack())
