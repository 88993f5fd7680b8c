#!/usr/bin/env bash
# Downloads the torch_npu wheel once (cached in third_party/, gitignored) and unpacks its include/ folder only:
# HCCL's public headers (hccl.h, hccl_types.h), ACL's and torch_npu's. torch_npu is never installed (installed
# without the Ascend toolkit it breaks `import torch`). The build never needs them (it uses the repository's own
# include/); the compile checks do: scripts/compile_check_vendor_headers.sh compares include/ with them, and
# scripts/compile_check_hccl.sh compiles the NPU backend and the CPU implementations of the APIs against them.
#
#   bash scripts/fetch_hccl_headers.sh      # prints the include folder on its last line
# Environment: PYTHON (default: the active python), ATB_OPS_CACHE (default: third_party/),
#              ATB_OPS_TORCH_NPU_VERSION (default 2.13.0, matching the pinned torch).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$(command -v python || command -v python3)}"
VERSION="${ATB_OPS_TORCH_NPU_VERSION:-2.13.0}"
CACHE="${ATB_OPS_CACHE:-$ROOT/third_party}"
WHEELS="$CACHE/wheels"
HEADERS="$CACHE/torch_npu-$VERSION"

mkdir -p "$WHEELS"
wheel="$(ls "$WHEELS"/torch_npu-"$VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$wheel" ]; then
  echo "[hccl-headers] downloading the torch_npu==$VERSION wheel (headers only; not installed)" >&2
  "$PY" -m pip download -q "torch_npu==$VERSION" --no-deps --only-binary=:all: -d "$WHEELS" >&2 || {
    echo "[hccl-headers] FAILED: could not download torch_npu==$VERSION" >&2; exit 1; }
  wheel="$(ls "$WHEELS"/torch_npu-"$VERSION"-*.whl | head -n 1)"
fi
if [ ! -f "$HEADERS/.unpacked" ] || [ "$(cat "$HEADERS/.unpacked")" != "$(basename "$wheel")" ]; then
  echo "[hccl-headers] unpacking $(basename "$wheel") headers into $HEADERS" >&2
  rm -rf "$HEADERS"
  mkdir -p "$HEADERS"
  # Only include/: the wheel's libraries are useless without the toolkit.
  "$PY" - "$wheel" "$HEADERS" <<'PYEOF'
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("torch_npu/include/")])
PYEOF
  basename "$wheel" > "$HEADERS/.unpacked"
fi
NPU_INC="$HEADERS/torch_npu/include"
for must in third_party/hccl/inc/hccl/hccl.h third_party/hccl/inc/hccl/hccl_types.h acl/acl.h \
            torch_npu/csrc/core/npu/NPUStream.h; do
  [ -f "$NPU_INC/$must" ] || { echo "[hccl-headers] FAILED: $must is not in the wheel" >&2; exit 1; }
done
echo "$NPU_INC"
