#!/usr/bin/env bash
# The NVIDIA GPU check, one prepared script: the op matrix on DEV=CUDA (CUDA C through NVRTC) and DEV=CUDA:PTX (our PTX through the
# driver's JIT), the NV device's kernel-driver path (RM + UVM + a copy channel, bench/nv_driver_check.py), NV kernels (our PTX -> cubin
# by ptxas -> QMD launches, no libcuda: one kernel first, then the mock's op matrix subset on the real GPU, each under a time limit as a
# wrong launch can hang the channel), then the matmul benchmark beside torch. Where there is no NVIDIA GPU it says so and exits 0 (the renderers are still
# tested compile-only there: pytest tests/renderers/test_null_gpu.py). Run from a set-up checkout (README), e.g. bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
echo "== $(date -u +%FT%TZ) on $(uname -n); load:$(uptime | sed 's/.*load average://')"
if ! "$PY" -c '
from tinygrad import Device
try: dev = Device["CUDA"]
except Exception as e: print(f"CUDA: {type(e).__name__}: {e}"); raise SystemExit(1)
print(f"CUDA: {dev.arch}, renderer {type(dev.renderer).__name__}")'; then
  echo "NO NVIDIA GPU: nothing run. The CUDA C, PTX and AMDGPU renderers are tested compile-only by tests/renderers/test_null_gpu.py"
  exit 0
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
status=0
echo "== op matrix on DEV=CUDA"
TG_TEST_DEVICES=CUDA "$PY" -m pytest -q -n 4 tests/tensor -k "CUDA and not PTX" || status=1
echo "== op matrix on DEV=CUDA:PTX"
TG_TEST_DEVICES=CUDA:PTX "$PY" -m pytest -q -n 4 tests/tensor -k "CUDA-PTX" || status=1
echo "== NV device: the kernel-driver path (RM objects, UVM mappings, copy engine)"
"$PY" bench/nv_driver_check.py 0 || status=1
echo "== NV device: kernels (PTX -> cubin by ptxas, launched by QMD; MOCKGPU=0 as tests/conftest.py sets the mock otherwise)"
if MOCKGPU=0 timeout 120 "$PY" -c '
import numpy as np
from tinygrad import Tensor, Device
print(f"NV: {Device[\"NV:PTX\"].arch}")
a = np.arange(4096, dtype=np.float32)
np.testing.assert_allclose((Tensor(a, device="NV:PTX") * 2 + 1).numpy(), a * 2 + 1)
print("NV: one elementwise kernel ran and matched numpy")'; then
  MOCKGPU=0 TG_TEST_DEVICES=NV:PTX timeout 600 "$PY" -m pytest -q -n 4 tests/tensor -k "NV-PTX" || status=1
else status=1; fi
echo "== matmul beside torch (pip install torch for the comparison)"
for dev in CUDA CUDA:PTX; do "$PY" bench/gpu_matmul.py 4096 "$dev" || status=1; done
exit $status
