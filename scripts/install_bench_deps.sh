#!/usr/bin/env bash
# Benchmark-only dependencies for `python -m atb_ops bench`: Open MPI (mpirun, for the MPI_Alltoallv
# column), mpi4py and matplotlib (--plot). The test suite never needs them. Idempotent: skips what is
# already there. Installs into the active virtual environment, or .venv when none is active.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# mpirun runs the job; mpicc (libopenmpi-dev) lets pip build mpi4py where no wheel fits.
if ! command -v mpirun > /dev/null 2>&1 || ! command -v mpicc > /dev/null 2>&1; then
  echo "[bench-deps] installing Open MPI (openmpi-bin libopenmpi-dev)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev
else
  echo "[bench-deps] Open MPI present: $(mpirun --version 2>/dev/null | head -n 1)"
fi

if [ -z "${VIRTUAL_ENV:-}" ] && [ -f "$ROOT/.venv/bin/activate" ]; then
  # shellcheck disable=SC1091
  . "$ROOT/.venv/bin/activate"
fi
PY="${PYTHON:-python}"
for pkg in mpi4py matplotlib; do
  if "$PY" -c "import $pkg" > /dev/null 2>&1; then
    echo "[bench-deps] $pkg present"
  else
    echo "[bench-deps] installing $pkg"
    "$PY" -m pip install -q "$pkg"
  fi
done
"$PY" -c "from atb_ops.bench import mpi; ok, why = mpi.available(); print('[bench-deps] Open MPI column:', 'ready' if ok else why)" \
  2> /dev/null || echo "[bench-deps] done (atb_ops not importable from this Python: run scripts/setup.sh first)"
