"""The OpenCL C renderers (CL and the Qualcomm flavour QCOM): golden text of small kernels, what each holds per device features, and
the same kernels run on the CL device (PoCL in CI) against numpy. Rendering needs no OpenCL; running needs the `cl` fixture."""
import textwrap
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.codegen import get_program
from tinygrad.renderer.opencl import OpenCLRenderer, QCOMRenderer
from linprog import Prog

def golden(s:str) -> str: return textwrap.dedent(s).lstrip("\n")

L = 8  # items per group in the reduction

def group_sum(out:UOp, x:UOp) -> UOp:
  """out[g] = sum of x[g*L:(g+1)*L]: each item puts its element in LOCAL memory, then a loop halves the live part, a barrier per step"""
  g, lid = UOp.special(out.shape[0], "gidx0"), UOp.special(L, "lidx0")
  smem = UOp.placeholder((L,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
  filled = smem[lid].store(x[g*L + lid].load()).barrier()
  r = UOp.range(3, 0)
  cur, stride = smem.after(filled, r), UOp.const(dtypes.weakint, L // 2).alu(Ops.SHR, r)
  v = cur[lid].load() + cur[(lid < stride).where(lid + stride, lid)].load()
  step = cur[lid].store((lid < stride).where(v, cur[lid].load())).barrier()
  return out[g].store(smem.after(step.end(r))[0].load()).sink(arg=KernelInfo(name="group_sum", opts_to_apply=()))

def mask_and(out:UOp, a:UOp, b:UOp) -> UOp:
  """a bool input and a bool output: out[i] = a[i] & (b[i] < 0.5)"""
  r = UOp.range(out.shape[0], 0)
  return out[r].store(a[r].load() & (b[r].load() < 0.5)).end(r).sink(arg=KernelInfo(name="mask_and", opts_to_apply=()))

def sqrt_kernel(dt=dtypes.float32) -> list[UOp]:
  p = Prog()
  out, a = p.param(0, dt, 8), p.param(1, dt, 8)
  r = p.range(8, 0)
  p.store(out, r, p.alu(Ops.SQRT, p.alu(Ops.MUL, p.load(a, r), 2.0)))
  p.end(r)
  return p.uops

def do_while() -> list[UOp]:
  """acc += a[1] (only while a[0] < 5) until acc reaches 10: a bound-less loop left by its condition"""
  p = Prog()
  out, a = p.param(0, dtypes.int32, 4), p.param(1, dtypes.int32, 4)
  acc = p.reg(dtypes.int32, 1)
  p.store(acc, 0, 0)
  loop = p.loop(0)
  inc = p.alu(Ops.ADD, p.load(acc, 0), p.load(a, 1, alt=0, gate=p.alu(Ops.CMPLT, p.load(a, 0), 5)))
  p.store(acc, 0, inc)
  p.store(out, 0, inc)
  p.end(loop, p.alu(Ops.CMPLT, inc, 10))
  return p.uops

# *** golden text ***

def test_golden_elementwise():
  assert OpenCLRenderer().render("k", sqrt_kernel()) == golden("""
    #pragma OPENCL FP_CONTRACT OFF
    __kernel void k(__global float* data0, __global float* data1) {
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        float val0 = data1[ridx0];
        data0[ridx0] = sqrt((val0*2.0f));
      }
    }
    """)

def test_signed_values_wrap_and_addresses_stay_plain():
  # signed overflow is undefined in OpenCL C (pocl folded (x+1) > x to true at INT_MAX): a value's int add/mul is computed as uint, while
  # index math (a buffer's size fits an int) keeps signed ops the compiler can widen to addresses
  p = Prog()
  out, a = p.param(0, dtypes.int32, 8), p.param(1, dtypes.int32, 16)
  r = p.range(8, 0)
  p.store(out, r, p.alu(Ops.MUL, p.alu(Ops.ADD, p.load(a, p.alu(Ops.ADD, p.alu(Ops.MUL, r, 2), 1)), 1), 3))
  p.end(r)
  assert OpenCLRenderer().render("k", p.uops) == golden("""
    #pragma OPENCL FP_CONTRACT OFF
    __kernel void k(__global int* data0, __global int* data1) {
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        int val0 = data1[(ridx0*2)+1];
        data0[ridx0] = (int)(((uint)((int)(((uint)val0)+((uint)1))))*((uint)3));
      }
    }
    """)

def test_int_overflow_wraps_on_cl(cl):
  x = np.array([2**31-1, -2**31, 2**30, -2**30-1, 5], np.int32)
  t = Tensor(x, device="CL")
  with np.errstate(over="ignore"):
    np.testing.assert_array_equal(((t + 1) > t).numpy(), (x + np.int32(1)) > x)
    np.testing.assert_array_equal((t * 4 // 4).numpy(), x * np.int32(4) // np.int32(4))
    np.testing.assert_array_equal((-t < 0).numpy(), -x < 0)
  y = np.array([2**63-1, -2**63, 5], np.int64)
  np.testing.assert_array_equal(((Tensor(y, device="CL") + 1) > Tensor(y, device="CL")).numpy(), [False, True, True])

def test_golden_native_half_and_double():
  # with cl_khr_fp16 half is a type of its own (constants too, so the arithmetic stays half); double needs cl_khr_fp64
  assert OpenCLRenderer("fp16+fp64").render("k", sqrt_kernel(dtypes.float16)) == golden("""
    #pragma OPENCL FP_CONTRACT OFF
    #pragma OPENCL EXTENSION cl_khr_fp16 : enable
    __kernel void k(__global half* data0, __global half* data1) {
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        half val0 = data1[ridx0];
        data0[ridx0] = sqrt((val0*(half)2.0f));
      }
    }
    """)
  assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in OpenCLRenderer("fp64").render("k", sqrt_kernel(dtypes.float64))

def test_golden_emulated_half():
  # without cl_khr_fp16: float in registers, 16 bits in memory through vload_half/vstore_half_rte, rounded after every op
  src = OpenCLRenderer().render("k", sqrt_kernel(dtypes.float16))
  assert "vload_half(0, (const half*)&h)" in src and "vstore_half_rte(f, 0, (half*)&h)" in src and "cl_khr_fp16" not in src
  assert src.split("\n", 4)[-1] == golden("""
    __kernel void k(__global ushort* data0, __global ushort* data1) {
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        float val0 = __tg_h2f(data1[ridx0]);
        data0[ridx0] = __tg_f2h(__tg_rh(sqrt(__tg_rh(val0*2.0f))));
      }
    }
    """)

def test_golden_reduction_through_local_memory():
  out, x = UOp.param(0, dtypes.float, (4,)), UOp.param(1, dtypes.float, (4*L,))
  spec = get_program(group_sum(out, x), OpenCLRenderer())
  assert (spec.global_size, spec.local_size) == ((4, 1, 1), (L, 1, 1))
  assert spec.src == golden("""
    #pragma OPENCL FP_CONTRACT OFF
    __kernel void group_sum(__global float* data0, __global float* data1) {
      long gidx0 = get_group_id(0); /* 4l */
      __local float smem0[8];
      long lidx0 = get_local_id(0); /* 8l */
      float val0 = data1[(gidx0*8l)+lidx0];
      smem0[lidx0] = val0;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (long ridx0 = 0; ridx0 < 3l; ridx0++) {
        long alu0 = 4l>>ridx0;
        bool alu1 = lidx0<alu0;
        float val1 = smem0[lidx0];
        float val2 = smem0[alu1?(lidx0+alu0):lidx0];
        smem0[lidx0] = alu1?(val1+val2):val1;
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      float val3 = smem0[0l];
      data0[gidx0] = val3;
    }
    """)

@pytest.mark.parametrize("renderer", [OpenCLRenderer, QCOMRenderer])
def test_golden_do_while(renderer):
  assert renderer().render("k", do_while()) == golden("""
    #pragma OPENCL FP_CONTRACT OFF
    __kernel void k(__global int* data0, __global int* data1) {
      int reg0[1];
      reg0[0] = 0;
      for (;;) {
        int val0 = reg0[0];
        int val1 = data1[0];
        int val2 = (val1<5)?data1[1]:0;
        int alu0 = (int)(((uint)val0)+((uint)val2));
        reg0[0] = alu0;
        data0[0] = alu0;
        if (!(alu0<10)) break;
      }
    }
    """)

def test_golden_qcom_bool_buffers_are_uchar():
  out, a, b = UOp.param(0, dtypes.bool, (4,)), UOp.param(1, dtypes.bool, (4,)), UOp.param(2, dtypes.float, (4,))
  assert get_program(mask_and(out, a, b), QCOMRenderer()).src == golden("""
    #pragma OPENCL FP_CONTRACT OFF
    __kernel void mask_and(__global uchar* data0, __global uchar* data1, __global float* data2) {
      for (int ridx0 = 0; ridx0 < 4; ridx0++) {
        bool val0 = data1[ridx0]!=0;
        float val1 = data2[ridx0];
        data0[ridx0] = (val0&(val1<0.5f))?1:0;
      }
    }
    """)
  # the plain OpenCL dialect keeps bool buffers
  assert "__global bool* data0, __global bool* data1" in get_program(mask_and(out, a, b), OpenCLRenderer()).src

def test_qcom_bool_in_local_memory_stays_bool():
  # only global buffers are uchar: a REG/LOCAL array holds values as computed
  p = Prog()
  out, a = p.param(0, dtypes.bool, 1), p.param(1, dtypes.bool, 1)
  reg = p.reg(dtypes.bool, 1)
  p.store(reg, 0, p.load(a, 0))
  p.store(out, 0, p.load(reg, 0))
  src = QCOMRenderer().render("k", p.uops)
  assert "bool reg0[1];" in src and "reg0[0] = val0;" in src and "data0[0] = val1?1:0;" in src

# *** what each renderer holds ***

F8 = {dtypes.fp8e4m3, dtypes.fp8e5m2}

@pytest.mark.parametrize("renderer, arch, has, lacks", [
  (OpenCLRenderer, None, {dtypes.float16, dtypes.bool, dtypes.int64}, {dtypes.float64, dtypes.bfloat16} | F8),
  (OpenCLRenderer, "fp64", {dtypes.float16, dtypes.float64, dtypes.bfloat16}, F8),
  (OpenCLRenderer, "fp16+fp64", {dtypes.float16, dtypes.float64, dtypes.bfloat16}, F8),
  (QCOMRenderer, None, {dtypes.float32, dtypes.bool, dtypes.uint8}, {dtypes.float16, dtypes.float64, dtypes.bfloat16} | F8),
  (QCOMRenderer, "fp16", {dtypes.float16}, {dtypes.float64, dtypes.bfloat16} | F8)])
def test_supported_dtypes(renderer, arch, has, lacks):
  dts = renderer(arch).supported_dtypes()
  assert has <= dts and not lacks & dts
  with pytest.raises(RuntimeError, match="fp8e4m3"): renderer(arch).render("k", sqrt_kernel(dtypes.fp8e4m3))

def test_bad_arch_is_named():
  with pytest.raises(ValueError, match=r"unknown features \['fp32'\].*fp16\+fp64"): OpenCLRenderer("fp16+fp32")
  with pytest.raises(ValueError, match="Adreno has no double"): QCOMRenderer("fp64")
  with pytest.raises(RuntimeError, match="QCOMRenderer has no type for dtypes.half"): QCOMRenderer().render("k", sqrt_kernel(dtypes.float16))

def test_renderer_for_device_extensions():
  exts = frozenset({"cl_khr_fp16", "cl_khr_fp64", "cl_khr_icd"})
  assert OpenCLRenderer.for_extensions(exts).features == {"fp16", "fp64"}
  assert QCOMRenderer.for_extensions(exts).features == {"fp16"}  # an Adreno reporting fp64 still gets no double
  assert OpenCLRenderer.for_extensions(frozenset()).features == frozenset()

# *** compile-only on NULL ***

@pytest.mark.parametrize("dev, prefix", [("NULL:CL", "__global bool*"), ("NULL:QCOM", "__global uchar*")])
def test_null_renders_opencl(dev, prefix):
  from tinygrad.device import Device
  assert type(Device[dev].renderer).__name__ == {"NULL:CL": "OpenCLRenderer", "NULL:QCOM": "QCOMRenderer"}[dev]
  out, a, b = UOp.param(0, dtypes.bool, (4,)), UOp.param(1, dtypes.bool, (4,)), UOp.param(2, dtypes.float, (4,))
  assert f"__kernel void mask_and({prefix} data0" in get_program(mask_and(out, a, b), Device[dev].renderer).src
  # the whole path from Tensor to a "compiled" program, without OpenCL
  t = (Tensor([1.0, 2.0], device=dev) * 3).realize()
  assert t.device == dev and t.shape == (2,)

# *** on the CL device ***

@pytest.mark.parametrize("dev", ["CL", "CL:QCOM"])
def test_reduction_through_local_memory_runs(cl, dev):
  x = np.random.default_rng(0).standard_normal(5 * L).astype(np.float32)
  out = Tensor.custom_kernel(Tensor.empty(5, device=dev), Tensor(x, device=dev), fxn=group_sum)[0]
  np.testing.assert_allclose(out.numpy(), x.reshape(5, L).sum(1), rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("dev", ["CL", "CL:QCOM"])
def test_bool_input_and_output_run(cl, dev):
  rng = np.random.default_rng(1)
  a, b = rng.random(37) < 0.5, rng.random(37).astype(np.float32)
  out = Tensor.custom_kernel(Tensor.empty(37, dtype=dtypes.bool, device=dev), Tensor(a, device=dev), Tensor(b, device=dev), fxn=mask_and)[0]
  np.testing.assert_array_equal(out.numpy(), a & (b < 0.5))
  # stores write 0/1 bytes: the buffer read as bytes holds nothing else
  assert set(out.numpy().view(np.uint8).tolist()) == {0, 1}

def test_qcom_dialect_matches_numpy(cl):
  rng = np.random.default_rng(2)
  x, y = rng.standard_normal((6, 7)).astype(np.float32), rng.integers(-5, 5, (6, 7)).astype(np.int32)
  tx, ty = Tensor(x, device="CL:QCOM"), Tensor(y, device="CL:QCOM")
  np.testing.assert_array_equal(((tx > 0) & (ty != 0)).numpy(), (x > 0) & (y != 0))
  np.testing.assert_array_equal((tx > 0).where(ty, -ty).sum(1).numpy(), np.where(x > 0, y, -y).sum(1))
  np.testing.assert_allclose((tx.exp() * ty).max(0).numpy(), (np.exp(x) * y).max(0), rtol=1e-6)
  np.testing.assert_array_equal(Tensor([True, False, True], device="CL:QCOM").logical_not().numpy(), [False, True, False])

def test_do_while_runs(cl):
  from tinygrad.device import Device
  dev = Device["CL"]
  prg = dev.runtime("k", dev.compiler.compile(dev.renderer.render("k", do_while())))
  out, a = dev.allocator.alloc(16), dev.allocator.alloc(16)
  dev.allocator._copyin(a, memoryview(np.array([2, 3, 0, 0], np.int32)).cast("B"))
  prg(out, a, wait=True)
  res = np.zeros(4, np.int32)
  dev.allocator._copyout(memoryview(res).cast("B"), out)
  assert res[0] == 12  # 3, 6, 9, 12: the loop runs until the sum reaches 10
