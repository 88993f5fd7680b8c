#!/usr/bin/env bash
# Compile-only check of every translation unit of the NCCL backend (csrc/comm/nccl/, its CUDA-only cuda/
# folder included, and tests/native/nccl_mock_bindings.cpp) against the real nccl.h, the CUDA toolkit's headers
# and torch's headers, with the flags setup.py's build uses. Runs on machines without a GPU, so CI
# catches a wrong NCCL signature or a drifted enum mirror (cuda/nccl_api_impl.cpp static_asserts them).
#
#   bash scripts/compile_check_nccl.sh          # exit 0: every TU compiled; non-zero: one did not
#   bash scripts/compile_check_nccl.sh --link   # also link the real NcclApi and the logic against libnccl.so.2
#                                               # and run tests/native/standalone/nccl_link_smoke.cpp (no GPU needed)
#
# nccl.h comes from the nvidia-nccl-cu13 wheel (ATB_OPS_NCCL_WHEEL to pin another spec), downloaded once
# with pip and cached in third_party/nccl/ (gitignored); NCCL_INCLUDE=dir uses a header already on disk.
# CUDA headers: $CUDA_HOME/include (default /usr/local/cuda). Compiler: $CXX (default c++).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON_BIN="${PYTHON:-python}"
CXX_BIN="${CXX:-c++}"
CUDA_DIR="${CUDA_HOME:-/usr/local/cuda}"
CACHE="$ROOT/third_party/nccl"
WHEEL_SPEC="${ATB_OPS_NCCL_WHEEL:-nvidia-nccl-cu13}"
LINK=0
SKIP_BUILT=0
for arg in "$@"; do
  case "$arg" in
    --link) LINK=1 ;;
    --skip-built) SKIP_BUILT=1 ;;  # scripts/test.sh: TUs setup.py just compiled are not compiled twice
    *) echo "usage: $0 [--link] [--skip-built]" >&2; exit 2 ;;
  esac
done

say() { echo "[compile-check-nccl] $*"; }

# Downloads the wheel once per call and keeps only what is asked for: "header" (nccl.h and its licence)
# and/or "lib" (the 340 MB libnccl.so.2, only for --link).
fetch_from_wheel() {
  say "fetching $WHEEL_SPEC ($*) into $CACHE"
  local tmp
  tmp="$(mktemp -d)"
  "$PYTHON_BIN" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$WHEEL_SPEC"
  mkdir -p "$CACHE/include" "$CACHE/lib"
  "$PYTHON_BIN" - "$(ls "$tmp"/*.whl)" "$CACHE" "$@" <<'EOF'
import shutil
import sys
import zipfile
from pathlib import Path

wheel, cache, wanted = sys.argv[1], Path(sys.argv[2]), set(sys.argv[3:])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if "header" in wanted and name.endswith("/include/nccl.h"):
            (cache / "include" / "nccl.h").write_bytes(z.read(name))
        elif "header" in wanted and name.endswith("License.txt"):
            (cache / "LICENSE.txt").write_bytes(z.read(name))
        elif "lib" in wanted and name.endswith("/lib/libnccl.so.2"):
            with z.open(name) as src, open(cache / "lib" / "libnccl.so.2", "wb") as dst:
                shutil.copyfileobj(src, dst)
(cache / "SOURCE").write_text(Path(wheel).name + "\n")
EOF
  rm -rf "$tmp"
}

if [ ! -f "$CUDA_DIR/include/cuda_runtime_api.h" ]; then
  say "FAILED: no CUDA toolkit headers at $CUDA_DIR/include (set CUDA_HOME)"
  exit 2
fi

if [ -n "${NCCL_INCLUDE:-}" ]; then
  nccl_include="$NCCL_INCLUDE"
else
  nccl_include="$CACHE/include"
  [ -f "$nccl_include/nccl.h" ] || fetch_from_wheel header
fi
[ -f "$nccl_include/nccl.h" ] || { say "FAILED: no nccl.h in $nccl_include"; exit 2; }
nccl_version="$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{printf "%s%s", sep, $3; sep="."}' "$nccl_include/nccl.h")"

# The flags of setup.py's extension build (torch.utils.cpp_extension with -std=c++17), one per line.
mapfile -t flags < <("$PYTHON_BIN" - "$ROOT" <<'EOF'
import os
import sys
import sysconfig

import nlohmann_json
import torch
from torch.utils.cpp_extension import include_paths

root = sys.argv[1]
flags = ["-O2", "-std=c++17", "-fvisibility=hidden", "-fPIC", "-Wall",
         f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
         "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C",
         f"-I{root}", f"-I{root}/csrc", f"-I{os.path.join(os.path.dirname(nlohmann_json.__file__), 'include')}"]
flags += [f"-I{p}" for p in include_paths()]
flags.append(f"-I{sysconfig.get_paths()['include']}")
# CPU wheels ship c10/cuda headers but not the CMake-generated cuda_cmake_macros.h; on Linux it only
# defines the Windows export switch, and this macro is c10's own way to do without it.
torch_include = include_paths()[0]
if not os.path.exists(os.path.join(torch_include, "c10", "cuda", "impl", "cuda_cmake_macros.h")):
    flags.append("-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE")
print("\n".join(flags))
EOF
)
flags+=("-I$CUDA_DIR/include" "-I$nccl_include")

shopt -s nullglob
cuda_tus=(csrc/comm/nccl/cuda/*.cpp csrc/comm/nccl/cuda/*.cu)
# The --link smoke program is compiled on every run (no link, so no libnccl download): it went stale once, unseen,
# when the bootstrap interface changed under it.
smoke_tu=tests/native/standalone/nccl_link_smoke.cpp
logic_tus=(csrc/comm/nccl/*.cpp tests/native/nccl_mock_bindings.cpp)
if [ "$SKIP_BUILT" -eq 1 ]; then
  kept=()
  for tu in "${logic_tus[@]}"; do
    if compgen -G "build/temp.*/${tu%.cpp}.o" > /dev/null; then say "built   $tu (by setup.py)"; else kept+=("$tu"); fi
  done
  logic_tus=("${kept[@]}")
fi
if [ "${#cuda_tus[@]}" -eq 0 ]; then
  say "FAILED: no translation units in csrc/comm/nccl/cuda/ (nothing would be checked)"
  exit 2
fi

say "nccl.h $nccl_version from $nccl_include; CUDA headers from $CUDA_DIR/include; compiler $("$CXX_BIN" --version | head -1)"
say "flags: ${flags[*]}"
failed=0
log="$(mktemp)"
for tu in "${cuda_tus[@]}" "${logic_tus[@]}" "$smoke_tu"; do
  start=$(date +%s)
  case "$tu" in
    *.cu) cmd=("$CUDA_DIR/bin/nvcc" -std=c++17 -c "$tu" -o /dev/null) ;;
    *) cmd=("$CXX_BIN" "${flags[@]}" -c "$tu" -o /dev/null) ;;
  esac
  if "${cmd[@]}" > "$log" 2>&1; then
    # Warnings in torch's headers are torch's; warnings in ours fail the check.
    if grep -E "^($ROOT/)?(csrc|op_plugin|tests/native)/[^:]*:[0-9]+:[0-9]+: warning" "$log" > /dev/null; then
      say "FAILED  $tu (warnings in our code):"
      grep -E -A3 "^($ROOT/)?(csrc|op_plugin)/[^:]*:[0-9]+:[0-9]+: warning" "$log" | head -40
      failed=$((failed + 1))
    else
      say "ok      $tu ($(( $(date +%s) - start )) s)"
    fi
  else
    say "FAILED  $tu:"
    grep -E "error|note: " "$log" | head -40 || tail -40 "$log"
    failed=$((failed + 1))
  fi
done
rm -f "$log"
total=$(( ${#cuda_tus[@]} + ${#logic_tus[@]} + 1 ))
if [ "$failed" -ne 0 ]; then
  say "$failed of $total translation units FAILED to compile"
  exit 1
fi
say "all $total translation units compiled against nccl.h $nccl_version (${#cuda_tus[@]} CUDA/NCCL-only)"

if [ "$LINK" -eq 1 ]; then
  [ -f "$CACHE/lib/libnccl.so.2" ] || fetch_from_wheel lib
  [ -f "$CUDA_DIR/lib64/libcudart.so" ] || { say "FAILED: no $CUDA_DIR/lib64/libcudart.so to link"; exit 2; }
  torch_lib="$("$PYTHON_BIN" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
  exe="$(mktemp -d)/nccl_link_smoke"
  say "linking the real NcclApi and the logic against $CACHE/lib/libnccl.so.2"
  "$CXX_BIN" "${flags[@]}" tests/native/standalone/nccl_link_smoke.cpp csrc/comm/nccl/cuda/nccl_api_impl.cpp \
    csrc/comm/nccl/nccl_api.cpp csrc/comm/nccl/nccl_comm.cpp csrc/core/status.cpp csrc/core/options.cpp \
    csrc/core/reduce.cpp csrc/core/reduce_kernels.cpp -o "$exe" \
    -L"$CACHE/lib" -l:libnccl.so.2 -L"$CUDA_DIR/lib64" -lcudart -L"$torch_lib" -lc10 -ltorch_cpu \
    -Wl,-rpath,"$CACHE/lib" -Wl,-rpath,"$CUDA_DIR/lib64" -Wl,-rpath,"$torch_lib"
  "$exe"
  rm -rf "$(dirname "$exe")"
fi
