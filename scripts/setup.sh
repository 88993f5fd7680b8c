#!/usr/bin/env bash
# Idempotent set-up for a fresh machine or an existing checkout: a virtual environment in .venv,
# the pinned packages, and every native part built in place (ninja keeps rebuilds incremental; nothing is
# fetched: the vendor API headers are the repository's own, include/).
# Source-able by other scripts; prints only what it does.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${ATB_OPS_VENV:-$ROOT/.venv}"
PYTHON_BIN="${PYTHON:-$(command -v python3.11 || command -v python3)}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV with $PYTHON_BIN"
  "$PYTHON_BIN" -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"

stamp="$VENV/.atb_ops-requirements.sha256"
want="$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing requirements (torch pinned to 2.13.0)"
  # --no-compile: pip compiles one file at a time; scripts/precompile_venv.sh does it on every core.
  python -m pip install -q --no-compile --upgrade pip
  python -m pip install -q --no-compile -r requirements-dev.txt
  echo "$want" > "$stamp"
  rm -f "$VENV/.atb_ops-precompiled"
fi
bash "$ROOT/scripts/precompile_venv.sh" "$VENV"

echo "[setup] building atb_ops (native libraries and extensions, with the test mocks)"
export ATB_OPS_TESTING=1  # atb_ops._testing: the vendor mocks the test suite drives (never in a wheel)
start=$(date +%s)
MAX_JOBS="${MAX_JOBS:-$(nproc)}" python setup.py -q build_ext --inplace > "$VENV/.atb_ops-build.log" 2>&1 || {
  tail -n 60 "$VENV/.atb_ops-build.log"; echo "[setup] build failed (full log: $VENV/.atb_ops-build.log)"; exit 1; }
echo "[setup] built in $(( $(date +%s) - start )) s"

# The package is used from the source tree (python/), like an editable install.
site="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$ROOT/python" > "$site/atb_ops_dev.pth"
