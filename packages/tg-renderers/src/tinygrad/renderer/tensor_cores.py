"""The tensor cores of the GPU targets, as their ISA documents lay out the fragments (codegen/opt/tc.py says how a layout is written):
- NVIDIA mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
  point type"): groupID = lane >> 2, threadID_in_group = lane % 4. A (16x16): a_i at row groupID (+8 for i in 2,3,6,7), column
  threadID_in_group*2 + (i & 1) (+8 for i >= 4). B (16x8): b_i at row threadID_in_group*2 + (i & 1) (+8 for i >= 2), column groupID.
  C/D (16x8): c_i at row groupID (+8 for i >= 2), column threadID_in_group*2 + (i & 1).
- AMD RDNA3 v_wmma_f32_16x16x16_f16 in wave32 (RDNA3 ISA, "Wave Matrix Multiply Accumulate"): lane l holds row l % 16 of A and column
  l % 16 of B, all 16 k values (lanes 16-31 repeat lanes 0-15); D element i of lane l is at row 2*i + l // 16, column l % 16."""
from tinygrad.dtype import dtypes
from tinygrad.codegen.opt.tc import Fragment, TensorCore

# lane bits 0-1 are threadID_in_group, bits 2-4 groupID
_GROUP_ROWS, _TIG_COLS = ((0, 0), (0, 0), (1, 0), (2, 0), (4, 0)), ((0, 2), (0, 4), (0, 0), (0, 0), (0, 0))
def _add(x, y): return tuple((a[0]+b[0], a[1]+b[1]) for a, b in zip(x, y))
_MMA_A = Fragment(_add(_GROUP_ROWS, _TIG_COLS), tuple((8 * (i >> 1 & 1), (i & 1) + 8 * (i >> 2)) for i in range(8)))
_MMA_B = Fragment(((2, 0), (4, 0), (0, 1), (0, 2), (0, 4)), tuple(((i & 1) + 8 * (i >> 1), 0) for i in range(4)))
_MMA_C = Fragment(_add(_GROUP_ROWS, _TIG_COLS), tuple((8 * (i >> 1), i & 1) for i in range(4)))
def _mma(t:str, dt) -> TensorCore:
  return TensorCore(f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32", (8, 16, 16), 32, dt, dtypes.float32, _MMA_A, _MMA_B, _MMA_C)
MMA_M16N8K16 = (_mma("f16", dtypes.float16), _mma("bf16", dtypes.bfloat16))

_LOW16 = ((1, 0), (2, 0), (4, 0), (8, 0))
WMMA_RDNA3 = (TensorCore("v_wmma_f32_16x16x16_f16", (16, 16, 16), 32, dtypes.float16, dtypes.float32,
                         Fragment(_LOW16 + ((0, 0),), tuple((0, k) for k in range(16))),
                         Fragment(tuple((c, r) for r, c in _LOW16) + ((0, 0),), tuple((k, 0) for k in range(16))),
                         Fragment(tuple((c, r) for r, c in _LOW16) + ((1, 0),), tuple((2 * i, 0) for i in range(8)))),)
