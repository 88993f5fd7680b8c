#!/usr/bin/env bash
# Compile-checks the CUDA quantisation kernels (csrc/quant/quant_cuda.cu) with nvcc against this torch's
# headers, so a broken kernel or signature is caught on machines without a GPU (nothing is linked or run).
# Skips, saying so, when nvcc is not installed. A stamp in build/ skips an unchanged source.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
NVCC="${NVCC:-$(command -v nvcc || true)}"
if [ -z "$NVCC" ]; then
  echo "[compile_check_quant_cuda] skipped: nvcc not found (CUDA kernels are built only where torch has CUDA)"
  exit 0
fi
PY="${PYTHON:-python}"
TORCH_INC="$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "include"))')"
PY_INC="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
stamp_dir="$ROOT/build/compile_check"
mkdir -p "$stamp_dir"
want="$(cat csrc/quant/quant_cuda.cu csrc/quant/quant.h "$0" | sha256sum | cut -d' ' -f1)-$("$NVCC" --version | tail -1)"
if [ -f "$stamp_dir/quant_cuda.ok" ] && [ "$(cat "$stamp_dir/quant_cuda.ok")" = "$want" ]; then
  echo "[compile_check_quant_cuda] unchanged since the last successful check"
  exit 0
fi
# A CPU-only torch wheel lacks the generated c10/cuda/impl/cuda_cmake_macros.h: supply its one definition.
shim="$stamp_dir/include/c10/cuda/impl"
mkdir -p "$shim"
[ -f "$TORCH_INC/c10/cuda/impl/cuda_cmake_macros.h" ] || printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$shim/cuda_cmake_macros.h"
start=$(date +%s)
"$NVCC" -c -std=c++17 -O2 --fmad=false -arch=sm_80 -DATB_OPS_QUANT_CUDA=1 \
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ \
  -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr -diag-suppress 3306 -Xcompiler -fPIC \
  -Icsrc -I. -I"$stamp_dir/include" -I"$TORCH_INC" -I"$TORCH_INC/torch/csrc/api/include" -I"$PY_INC" \
  csrc/quant/quant_cuda.cu -o "$stamp_dir/quant_cuda.o" 2> "$stamp_dir/quant_cuda.log" || {
  cat "$stamp_dir/quant_cuda.log"
  echo "[compile_check_quant_cuda] FAILED"
  exit 1
}
echo "$want" > "$stamp_dir/quant_cuda.ok"
echo "[compile_check_quant_cuda] csrc/quant/quant_cuda.cu compiles (nvcc, sm_80) in $(( $(date +%s) - start )) s"
