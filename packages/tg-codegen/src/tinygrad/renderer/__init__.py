# renderers live in several distributions (tg-renderers, third parties): gather every tinygrad/renderer folder
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
from tinygrad.dtype import DType, dtypes

class Renderer:
  """Turns a linearized list of UOps into source code for one target."""
  device: str = ""
  suffix: str = ""
  # work items (codegen.gpudims): with has_local, GLOBAL/LOCAL ranges become group ids (gidx0..2, at most global_max[d] groups) and
  # ids within the group (lidx0..2, at most local_max[d] items) and the program is launched over that grid; without, they stay loops
  has_local: bool = False
  global_max: tuple[int, ...]|None = None
  local_max: tuple[int, ...]|None = None
  # LOCAL buffers are shared by the items of a work group (needs has_local; without work items a LOCAL buffer is a plain array)
  has_shared: bool = False
  # without work items: a THREAD range (codegen.opt) becomes the thread id gidx0 and the program is called once per id, concurrently
  # (CPU cores); elsewhere it is a loop
  has_threads: bool = False
  # the matrix instructions of the target (codegen/opt/tc.py TensorCore), which OptOps.TC may use; a renderer that declares one renders
  # Ops.WMMA with it. None on targets without tensor cores
  tensor_cores: tuple = ()
  # the target's SIMD registers, which codegen/opt/heuristic.py sizes register tiles in: bytes in one, and how many there are. AVX2's by
  # default; a host renderer reads the host's (renderer/host_cpu.py: AVX-512 has 32 of 64 bytes, NEON 32 of 16)
  vector_bytes: int = 32
  vector_registers: int = 16
  # the most lanes of a register tile whose unrolled code the target's compiler still packs into vectors (heuristic.wide_panel_tile's 24
  # accumulators of 16 take 384): LLVM's through llvmlite and clang's do; gcc 12 packs 16 accumulators best
  tile_lanes: int = 256
  # the target's compiler vectorizes a plain loop across its trips on its own (LLVM's loop vectorizer; the C renderer's compilers run
  # without it): an elementwise kernel evaluating a polynomial per element is then left untiled, and a sum over a row no vector divides
  # unrolled-free, for it to pack (heuristic.hand_coded_opts)
  loop_vectorizes: bool = False
  # the ALU ops this target renders directly (Ops -> how); lowering decomposes the others before render
  code_for_op: dict = {}
  # transcendentals (EXP2, LOG2, SIN) the target renders directly but which a kernel with at most `polynomial_budget` of them in all
  # (counted after lanes are expanded) gets as codegen/transcendental.py's polynomials instead: a host's libm call runs one lane at a
  # time, the polynomial vectorizes, and the budget bounds its compile time in a long fused chain
  polynomial_budget: int = 0
  def __init__(self, arch:str|None=None):
    """`arch` is the ARCH of DEV=DEVICE:RENDERER:ARCH (None: the machine's own); a renderer for one target may ignore it"""
    self.arch = arch
  def supported_dtypes(self) -> frozenset[DType]:
    """the dtypes kernels rendered by this renderer can hold (tinygrad.device.is_dtype_supported asks this); all by default"""
    return frozenset(dt for dt in dtypes.fields().values() if dt is not dtypes.void and not dtypes.is_weak(dt))
  def render(self, name:str, uops:list) -> str: raise NotImplementedError(f"{type(self).__name__} does not implement render")
