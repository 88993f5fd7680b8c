#!/usr/bin/env bash
# Byte-compile a virtual environment's packages, once (a marker file remembers it), on every core.
# Why: where PYTHONDONTWRITEBYTECODE is set (this machine's environment sets it), and in every `python -B` rank,
# Python never caches what it compiles, so each process the test suite starts compiled torch from source again:
# `import torch` took 3.1 s of CPU instead of 1.5 s. This costs about 13 s on 2 cores. Only a speed-up: a file that
# does not compile here (torch ships one in Python 3.12 syntax, left out) is compiled, or fails, where imported.
#
#   bash scripts/precompile_venv.sh VENV
set -euo pipefail
venv="${1:?usage: bash scripts/precompile_venv.sh VENV}"
marker="$venv/.atb_ops-precompiled"
[ -f "$marker" ] && exit 0
echo "[setup] byte-compiling the packages of $venv"
log="$venv/.atb_ops-compileall.log"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$venv/bin/python" -m compileall -q -j "$(nproc)" -x 'py312_intrinsics' "$site" > "$log" 2>&1 ||
  echo "[setup] $(grep -c '^\*\*\* Error' "$log") file(s) did not byte-compile (see $log)"
touch "$marker"
