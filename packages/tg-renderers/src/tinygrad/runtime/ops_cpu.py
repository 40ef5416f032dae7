"""CPU: host memory, kernels compiled in process by LLVM through llvmlite (the default) or by a system C compiler (DEV=CPU:C),
called through ctypes. llvmlite is imported on first use, never at import."""
from __future__ import annotations
import ctypes, functools, hashlib, itertools, mmap, os, pathlib, re, time
from tinygrad.device import BufferSpec, LRUAllocator, Compiler, Compiled, CompileError, Device, DeviceError
from tinygrad.runtime import host_toolchain
from tinygrad.renderer.host_cpu import BUFFER_ALIGN, host_simd_registers
from tinygrad.runtime.cpu_threads import run_shared
from tinygrad.runtime.graph_cpu import CPUGraph

HUGE_PAGE = 2 << 20  # a buffer this big asks for transparent huge pages: a kernel walking it with a stride of rows (matmul's B, a
                     # column per step) touches a new 4 KB page per step and misses the TLB; 2 MB pages cover it with a few entries

# each new buffer starts COLOUR_STEP bytes further into its first page than the last one (cache colouring): page-aligned buffers put the
# same row of every buffer in the same L1 sets (the index bits lie inside the page), and a kernel reading many buffers at once with rows
# a multiple of 4 KB apart evicted its own lines (an LSTM's weight gradient, 16 steps' gate gradients of 1024 floats a row: 24 against
# 67 GFLOP/s for the kernel with its buffers spread; 768 floats a row, no aliasing, 53-58 either way)
COLOUR_STEP, PAGE = 17 * BUFFER_ALIGN, 4096  # 17 lines: the colours of successive buffers walk every line of the page before one repeats
_colours = itertools.count()

class CPUAllocator(LRUAllocator):
  """anonymous mmaps, each buffer at its own offset into its first page (BUFFER_ALIGN-aligned, as LLVM kernels assume: see COLOUR_STEP;
  returned to the OS when dropped from the cache), reused through the LRU cache: a fresh mmap's pages fault on first touch (tens of ms
  per 64 MB in a VM); the handle is a ctypes byte array over one"""
  def _alloc(self, size:int, options:BufferSpec):
    if options.external_ptr is not None: return (ctypes.c_uint8 * size).from_address(options.external_ptr)
    at = next(_colours) * COLOUR_STEP % PAGE
    # private: a shared anonymous map is shmem, which gets no transparent huge pages
    m = mmap.mmap(-1, at + size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) if hasattr(mmap, "MAP_PRIVATE") else mmap.mmap(-1, at + size)
    if size >= HUGE_PAGE and hasattr(mmap, "MADV_HUGEPAGE"): m.madvise(mmap.MADV_HUGEPAGE)
    return (ctypes.c_uint8 * size).from_buffer(m, at)
  def _as_buffer(self, src) -> memoryview: return memoryview(src).cast("B")
  def _copyin(self, dest, src:memoryview): memoryview(dest).cast("B")[:] = src
  def _copyout(self, dest:memoryview, src): dest[:] = memoryview(src).cast("B")
  def _offset(self, buf, size:int, offset:int): return (ctypes.c_uint8 * size).from_buffer(buf, offset)
  # CPU:0, CPU:1, ... are separate devices in one address space: a copy between them is one memmove
  def _transfer(self, dest, src, nbytes:int, src_dev): ctypes.memmove(dest, src, nbytes)

class CPUProgram:
  """a kernel at a host address, called through ctypes with buffer pointers then int32 vars; holds what keeps its code mapped.
  `align`: the byte alignment the kernel assumes of every buffer (LLVM kernels: BUFFER_ALIGN); a buffer that lacks it is run on a copy"""
  def __init__(self, name:str, addr:int, keepalive, align:int=1):
    self.name, self.addr, self.keepalive, self.fxns, self.align = name, addr, keepalive, {}, align
  # the CPU renderers' only work item is the share id (a THREAD axis, codegen/opt): global_size[0] > 1 calls the kernel once per id,
  # with the id as a last int32 argument, on up to THREADS threads. ctypes releases the GIL during the call, so python threads use every
  # core. The threads take the next unrun share as they finish one: with more shares than threads, a core that another process slows
  # runs fewer of them instead of holding the whole kernel up (a fixed half each made a sum wait ~2x its time on a busy core).
  def __call__(self, *bufs, vals:tuple[int, ...]=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False) -> float|None:
    if (fxn := self.fxns.get((len(bufs), len(vals), (shares := global_size[0]) > 1))) is None: fxn = self.fxn(len(bufs), len(vals), shares > 1)
    args = list(map(ctypes.addressof, bufs))  # map: no comprehension frame per launch
    if (align := self.align) > 1 and any([a % align for a in args]): return self._on_aligned_copies(bufs, vals, global_size, local_size, wait)
    args += vals
    st = time.perf_counter() if wait else 0.0
    if shares > 1: run_shared(fxn, args, shares)
    else: fxn(*args)
    return time.perf_counter() - st if wait else None

  def fxn(self, nbufs:int, nvals:int, shared:bool):
    """the kernel as a ctypes function of nbufs pointers, nvals int32 values and, when shared, the share id"""
    if (fxn := self.fxns.get(key := (nbufs, nvals, shared))) is None:
      fxn = self.fxns[key] = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p]*nbufs, *[ctypes.c_int32]*(nvals + shared))(self.addr)
    return fxn

  def _on_aligned_copies(self, bufs, vals, global_size, local_size, wait) -> float|None:
    """run on aligned copies of the buffers that are not aligned (a view at an odd offset, a foreign pointer), then write back the copies
    the kernel changed. Only outputs change, and the kernel's buffers are noalias (no written bytes shared with another argument), so a
    write-back never clobbers what another argument holds. One copy per distinct (address, size): an argument passed twice stays one."""
    keys = [(ctypes.addressof(b), ctypes.sizeof(b)) for b in bufs]
    copies: dict[tuple[int, int], tuple] = {}
    for k, b in zip(keys, bufs):
      if k[0] % self.align and k not in copies:
        copies[k] = (b, (ctypes.c_uint8 * k[1]).from_buffer(mmap.mmap(-1, max(1, k[1]))))
        ctypes.memmove(copies[k][1], b, k[1])
    et = self(*[copies[k][1] if k in copies else b for k, b in zip(keys, bufs)], vals=vals, global_size=global_size, local_size=local_size,
              wait=wait)
    for (_, size), (b, c) in copies.items():
      if size and ctypes.string_at(b, size) != ctypes.string_at(c, size): ctypes.memmove(b, c, size)
    return et

# *** LLVM: IR -> object file (cached) -> MCJIT ***

_MASK_TO_SCALARS = re.compile(r"extractelement <\d+ x i1>|bitcast <\d+ x i1>|reduce\.\w+\.v\d+i1")
_MASK_SHUFFLES = re.compile(r"shufflevector <\d+ x i1>")

_PROBE = r"""import sys, llvmlite.binding as llvm
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
tm = llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu=sys.argv[2], opt=0)
tm.emit_object(llvm.parse_assembly("define void @f() {\n  ret void\n}"))"""

@functools.cache
def _check_cpu_model(triple:str, cpu:str):
  """a CPU model LLVM does not know for this triple is 'ignored' with a warning, then aborts the process in code generation (no python
  error to catch): a named one is tried once in a child process first"""
  import subprocess, sys
  r = subprocess.run([sys.executable, "-c", _PROBE, triple, cpu], capture_output=True, text=True, timeout=120)
  if r.returncode or "not a recognized processor" in r.stderr:
    raise DeviceError(f"{cpu!r} is not a CPU model LLVM can compile for ({triple}): name one such as x86-64, haswell, znver3 or "
                      f"neoverse-n1, as in DEV=CPU:LLVM:haswell (LLVM said: {r.stderr.strip().splitlines()[0] if r.stderr.strip() else r.returncode})")

class LLVMCompiler(Compiler):
  """LLVM IR -> an object file for this host (or for the CPU model `arch`, as in DEV=CPU:LLVM:x86-64): llvmlite parses, runs the O2
  pipeline of the new pass manager and emits"""
  host_only = True  # llvmlite calls LLVM through ctypes (the interpreter's lock released), one call at a time (its own lock)
  def __init__(self, arch:str|None=None):
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    self.llvm, self.triple, self.cpu = llvm, llvm.get_process_triple(), arch or llvm.get_host_cpu_name()
    if arch: _check_cpu_model(self.triple, arch)
    self.features = "" if arch else llvm.get_host_cpu_features().flatten()
    # LLVM tunes Intel's AVX-512 cores to prefer 256-bit vectors (and splits wider ones): the renderer sizes register tiles in the host's
    # whole registers (renderer/host_cpu.py), so the 512-bit ones are used (matmul 1024 at 2 threads: 181 -> 204 GFLOP/s, same tiles)
    if "+avx512f" in self.features.split(","): self.features += ",-prefer-256-bit"
    # nor to vectorize a loop with gathers and scatters, as it already is on Intel's cores since their gather mitigation: on AMD's (znver5)
    # it vectorized the row loop outside a short upcast one, each lane a row apart ((x+1) on 8x256x56x56 at 2 threads: 9.8 -> 0.7 ms)
    if "+avx2" in self.features.split(","): self.features += ",+prefer-no-gather,+prefer-no-scatter"
    # nor to use AMD's SSE4a insertq, which it picks to gather bytes into a vector: it has no VEX form, and after AVX code each took
    # ~0.17 us on a Zen 3 guest (the byte masks of max_pool2d's old gradient, 16x64x112x112: 0.9-1.0 s, 0.09-0.16 s without SSE4a)
    if "+sse4a" in self.features.split(",") and "+avx" in self.features.split(","): self.features += ",-sse4a"
    self.tm = self.target_machine()
    self.data_layout = str(self.tm.target_data)
    # LLVM 22's x86-compress-evex folds vpmovd2m + kmov (a vector mask moved into a general register) into vmovmskps, whose VEX form
    # names only xmm0-15: from xmm16-31 it read another register (llvm-project #191304; a related one: #198197). The fold takes the
    # 128/256-bit AVX-512VL forms only, so a kernel whose optimized IR moves a vector mask to scalars is emitted without AVX-512VL
    # (x < 0 on int lanes feeding selects: a sort of sin(x) ranked elements below themselves). Any x86 target: a named CPU model (arch)
    # implies its features
    # A shuffle of a narrow vector mask into a wider one (<2 x i1> -> <4 x i1>, SLP-packed selects of a sharded conv's gradient) aborts
    # LLVM 22's instruction selection on AVX-512 hosts, without AVX-512VL too ("Cannot BITCAST between types of different sizes"), and
    # the abort takes the process: such a kernel is emitted without AVX-512
    self.mask_safe_tm = self.mask_shuffle_tm = None
    if llvm.llvm_version_info[0] >= 22 and self.triple.startswith(("x86_64", "i386", "i686")) and "-avx512vl" not in self.features.split(","):
      make = lambda off: self.llvm.Target.from_triple(self.triple).create_target_machine(cpu=self.cpu, features=self.features + off, opt=2,
                                                                                         codemodel="large")
      self.mask_safe_tm, self.mask_shuffle_tm = make(",-avx512vl"), make(",-avx512f")
    # the key names the mask rules too: objects cached before them may hold the miscompiled fold
    emits = self.features + ("|masks without avx512vl|mask shuffles without avx512" if self.mask_safe_tm is not None else "")
    super().__init__(f"compile_llvm_{'.'.join(map(str, llvm.llvm_version_info))}_{self.triple}_{self.cpu}_"
                     f"{hashlib.sha256(emits.encode()).hexdigest()[:12]}")
  def target_machine(self):
    # the large code model: MCJIT may map code and constants more than 2GB apart
    return self.llvm.Target.from_triple(self.triple).create_target_machine(cpu=self.cpu, features=self.features, opt=2, codemodel="large")
  def optimized(self, src:str):
    """the module of IR src after the pipeline"""
    try:
      mod = self.llvm.parse_assembly(src)
      mod.verify()
    except RuntimeError as e: raise CompileError(f"LLVM rejected the IR: {e}\n{src}") from e
    mod.triple, mod.data_layout = self.triple, self.data_layout
    pto = self.llvm.create_pipeline_tuning_options(speed_level=2)
    pto.slp_vectorization = True  # upcast kernels are straight-line code
    pb = self.llvm.create_pass_builder(self.tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod
  def emitter(self, mod):
    """the target machine that emits mod: without AVX-512 where a vector mask is shuffled wider, without AVX-512VL where one moves to
    scalars (see __init__)"""
    if self.mask_safe_tm is None: return self.tm
    if _MASK_SHUFFLES.search(ir := str(mod)): return self.mask_shuffle_tm
    return self.mask_safe_tm if _MASK_TO_SCALARS.search(ir) else self.tm
  def compile(self, src:str) -> bytes: return self.emitter(mod := self.optimized(src)).emit_object(mod)
  def assembly(self, src:str) -> str: return self.emitter(mod := self.optimized(src)).emit_assembly(mod)
  def load(self, name:str, lib:bytes) -> CPUProgram:
    # one engine per kernel, so kernels of the same name never clash; an engine owns (and frees) the target machine it is given
    return load_object(self.llvm, self.target_machine(), name, lib)

def load_object(llvm, tm, name:str, lib:bytes) -> CPUProgram:
  engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
  engine.add_object_file(llvm.ObjectFileRef.from_data(lib))
  engine.finalize_object()
  if not (addr := engine.get_function_address(name)): raise RuntimeError(f"the object file has no function {name}")
  return CPUProgram(name, addr, engine, align=BUFFER_ALIGN)

# *** C: source -> shared object (cached) -> dlopen ***

def find_cc() -> str:
  if (cc := host_toolchain.find_cc()) is None: raise CompileError(f"DEV=CPU:C needs a C compiler, but there is none: {host_toolchain.no_cc_reason()}; "
                                                                  "or use the built-in LLVM: DEV=CPU:LLVM")
  return cc

def _host_cpu() -> str:
  """what -march=native compiles for: binaries in a cache shared between machines must not cross CPU models"""
  import platform
  try: return next((l for l in pathlib.Path("/proc/cpuinfo").read_text().splitlines() if l.startswith("flags")), platform.machine()) + platform.processor()
  except OSError: return platform.machine() + platform.processor()

class ClangCompiler(Compiler):
  """C -> a shared object built by the system compiler for this host (or for `arch`, as in DEV=CPU:C:x86-64).
  -fwrapv: ints wrap like the other targets; no contraction into fma"""
  host_only = True  # a process of its own
  def __init__(self, arch:str|None=None):
    import subprocess  # the C path only: the default (llvmlite) never starts a process
    self.cc, self.flags = find_cc(), ("-O2", "-shared", "-fPIC", "-ffp-contract=off", "-fwrapv", "-fno-math-errno", f"-march={arch or 'native'}")
    # as in LLVMCompiler: the host's whole AVX-512 registers, which the renderer's tiles are sized in (gcc and clang prefer 256 bits)
    if arch is None and host_simd_registers() == (64, 32): self.flags += ("-mprefer-vector-width=512",)
    # and as there, no SSE4a (insertq) beside AVX code
    if arch is None and {"sse4a", "avx"} <= set(_host_cpu().split()): self.flags += ("-mno-sse4a",)
    # the renderer packs its own vectors (renderer/c_vectors.py) and counts on no loop vectorizer (Renderer.loop_vectorizes); gcc 12.2's,
    # on at -O2, also miscompiled a padded int32 kernel (a row's lanes shifted by one: x * x.flip(1) padded, times a row)
    self.flags += host_toolchain.CLANG_VECTORIZING if host_toolchain.cc_is_clang(self.cc) else ("-fno-tree-loop-vectorize",)
    if arch is not None and (p := subprocess.run([self.cc, f"-march={arch}", "-x", "c", "-c", "-", "-o", os.devnull], input="",
                                                 capture_output=True, text=True)).returncode:
      raise DeviceError(f"{arch!r} is not a CPU model {self.cc} can compile for (-march={arch}): name one such as x86-64, haswell or "
                        f"znver3, as in DEV=CPU:C:haswell ({self.cc} said: {(p.stderr.strip().splitlines() or ['nothing'])[0]})")
    version = subprocess.run([self.cc, "--version"], capture_output=True, text=True).stdout.partition("\n")[0]
    super().__init__(f"compile_c_{hashlib.sha256(f'{version} {self.flags} {_host_cpu()}'.encode()).hexdigest()[:16]}")
  def compile(self, src:str) -> bytes:
    import subprocess, tempfile
    with tempfile.TemporaryDirectory() as d:
      out = os.path.join(d, "kernel.so")
      p = subprocess.run([self.cc, *self.flags, "-x", "c", "-", "-o", out, "-lm"], input=src.encode(), capture_output=True)
      if p.returncode != 0: raise CompileError(f"{self.cc} failed (exit {p.returncode}):\n{p.stderr.decode()}\n{src}")
      return pathlib.Path(out).read_bytes()
  def load(self, name:str, lib:bytes) -> CPUProgram: return load_shared(name, lib)

def load_shared(name:str, lib:bytes) -> CPUProgram:
  import tempfile
  with tempfile.NamedTemporaryFile(suffix=".so", delete=False) as f: f.write(lib)
  try: dll = ctypes.CDLL(f.name)
  finally: os.unlink(f.name)  # the mapping outlives the file
  return CPUProgram(name, ctypes.cast(getattr(dll, name), ctypes.c_void_p).value, dll)

class CPUDevice(Compiled):
  """Host memory and kernels run through ctypes. The renderer comes from the RendererSpecs registered for this device (LLVM and C
  by tg-renderers, more by other plugins); its compiler makes host code and loads it: `load(name, lib)` returns the program."""
  runs_in_process = True
  graph = CPUGraph
  def __init__(self, device:str="CPU"):
    renderer, compiler = Device.renderer_for(device)
    if not callable(getattr(compiler, "load", None)):
      raise DeviceError(f"device {device}: renderer {type(renderer).__name__} needs a compiler with load(name, lib) for host code, "
                        f"got {compiler!r}; name one in its RendererSpec(compiler='module:Class')")
    super().__init__(device, CPUAllocator(self), renderer, compiler, compiler.load)
