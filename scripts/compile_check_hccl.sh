#!/usr/bin/env bash
# Compile-checks every HCCL translation unit against the real HCCL, ACL and torch_npu headers, on a
# machine with no Ascend toolkit: the torch_npu==2.13.0 wheel is downloaded once (cached under
# third_party/, gitignored) and unpacked for its headers only; torch_npu is never installed.
#
# Each TU is compiled with `g++ -fsyntax-only` and the flags torch.utils.cpp_extension uses for
# atb_ops._C (torch and Python include dirs, -std=c++17, the torch build's -D_GLIBCXX_USE_CXX11_ABI and
# pybind11 ABI defines), plus torch_npu's include dir (hccl.h, hccl_types.h, acl/*.h, torch_npu/csrc/*).
# The static_asserts in csrc/comm/hccl/hccl_entry_points.h (included by both HcclApi implementations) then check
# the opaque constants of hccl_api.h (root-info size, HcclDataType and HcclResult codes) against the header.
# scripts/compile_check_vendor_headers.sh checks include/ (our own headers) against the same wheel.
#
# Exits non-zero when any TU fails (or the headers cannot be had). scripts/test.sh runs it with --skip-built.
# Environment: PYTHON (default: the active python), ATB_OPS_CACHE (default: third_party/),
#              ATB_OPS_TORCH_NPU_VERSION (default 2.13.0, matching the pinned torch), JOBS (default 2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-$(command -v python || command -v python3)}"
VERSION="${ATB_OPS_TORCH_NPU_VERSION:-2.13.0}"
JOBS="${JOBS:-2}"

echo "[hccl-check] torch_npu==$VERSION headers, python $("$PY" -c 'import sys; print(sys.version.split()[0])')"
NPU_INC="$(bash "$ROOT/scripts/fetch_hccl_headers.sh" | tail -n 1)"

# The flags cpp_extension would use for atb_ops._C, read from this torch build.
mapfile -t FLAGS < <("$PY" - <<'EOF'
import os
import sysconfig

import nlohmann_json
import torch
from torch.utils import cpp_extension

for d in cpp_extension.include_paths():
    print(f"-isystem{d}")
print(f"-isystem{sysconfig.get_paths()['include']}")
print(f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    value = getattr(torch._C, f"_PYBIND11_{name}", None)
    if value is not None:
        print(f'-DPYBIND11_{name}="{value}"')
print("-DTORCH_API_INCLUDE_EXTENSION_H")
print("-DTORCH_EXTENSION_NAME=_C")
# The JSON headers setup.py adds.
print(f"-isystem{os.path.join(os.path.dirname(nlohmann_json.__file__), 'include')}")
EOF
)
CXX="${CXX:-g++}"
# <hccl/hccl.h> and <acl/acl.h> resolve to the wheel's: the CPU implementations of HCCL's and ACL's APIs
# (csrc/emulated/hccl/, csrc/emulated/acl/, csrc/emulated/atb/hccl_backend/), built against include/ by setup.py,
# are compiled here against the vendor's declarations, so a definition that differs from the vendor's signature
# fails.
COMMON=(-fsyntax-only -std=c++17 -fPIC -Wall -Wextra "${FLAGS[@]}" -I"$ROOT/csrc" -I"$ROOT"
        -isystem"$NPU_INC" -isystem"$NPU_INC/third_party/hccl/inc")

# Every HCCL TU: the always-built logic, the toolkit-only real API and registration, HCCL's C API and the ACL
# runtime on CPU and the runner over them, and the test-only mock and its bindings.
mapfile -t TUS < <(ls csrc/comm/hccl/*.cpp csrc/comm/hccl/npu/*.cpp csrc/emulated/atb/hccl_backend/*.cpp \
                      csrc/emulated/hccl/*.cpp csrc/emulated/acl/*.cpp tests/native/hccl_mock*.cpp)
[ "${#TUS[@]}" -gt 0 ] || { echo "[hccl-check] FAILED: no HCCL translation units found"; exit 1; }
# --skip-built (scripts/test.sh, right after the build): TUs the build just compiled without vendor headers are
# not compiled twice; the NPU-only ones never are built here, and the CPU implementations of the vendor APIs
# were built against include/, not against these headers.
if [ "${1:-}" = "--skip-built" ]; then
  kept=()
  for tu in "${TUS[@]}"; do
    if [[ "$tu" != csrc/emulated/* ]] &&
       compgen -G "build/temp.*/${tu%.cpp}.o" > /dev/null; then echo "[hccl-check] built  $tu (by setup.py)"
    else kept+=("$tu"); fi
  done
  TUS=("${kept[@]}")
fi
LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT

check_one() {
  local tu="$1" log="$LOGS/$(echo "$1" | tr '/' '_').log" start=$SECONDS
  if "$CXX" "${COMMON[@]}" "$tu" > "$log" 2>&1; then
    local warn; warn=$(grep -c "warning:" "$log" || true)
    if [ "$warn" = "0" ]; then echo "[hccl-check] ok    $tu ($((SECONDS - start)) s)"; else echo "[hccl-check] ok    $tu ($((SECONDS - start)) s, $warn warning(s))"; fi
    [ "$warn" = "0" ] || sed 's/^/    /' "$log" | head -n 40
  else
    echo "[hccl-check] FAIL  $tu"
    sed 's/^/    /' "$log" | grep -v "^    In file included\|^     *from " | head -n 60
    return 1
  fi
}
# JOBS at a time (others may be compiling on this machine too); results are collected in start order.
failed=0
pids=()
for tu in "${TUS[@]}"; do
  check_one "$tu" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$JOBS" ]; then
    wait "${pids[0]}" || failed=$((failed + 1))
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done

if [ "$failed" -ne 0 ]; then
  echo "[hccl-check] FAILED: $failed of ${#TUS[@]} HCCL translation unit(s) do not compile against torch_npu==$VERSION"
  exit 1
fi
echo "[hccl-check] all ${#TUS[@]} HCCL translation units compile against torch_npu==$VERSION's hccl.h/acl/torch_npu headers"
