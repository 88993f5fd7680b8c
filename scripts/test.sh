#!/usr/bin/env bash
# README's test command: set everything up (scripts/setup.sh), lint, compile-check the vendor
# backends against their real headers, then run the whole test suite. CI (.ci/run) calls this.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
suite_start=$(date +%s)
# shellcheck source=scripts/setup.sh
. scripts/setup.sh

echo "[test] ruff"
ruff check python tests scripts setup.py

echo "[test] clang-format"
mapfile -t cxx < <(git ls-files 'include/*.h' 'scripts/conformance/*.cpp' 'csrc/*.h' 'csrc/*.cpp' 'csrc/*.cu' 'csrc/*.cuh' 'op_plugin/*.cpp' 'op_plugin/*.h' 'tests/native/*.cpp' 'tests/native/*.h' 'tests/c_programs/*.c')
clang-format --dry-run --Werror "${cxx[@]}"

for check in scripts/compile_check_*.sh; do
  [ -e "$check" ] || continue
  echo "[test] $check"
  case "$check" in
    *_hccl.sh|*_nccl.sh) bash "$check" --skip-built ;;
    *) bash "$check" ;;
  esac
done

echo "[test] pytest"
python -m pytest -q "$@"

echo "[test] the wheel, installed outside the checkout (scripts/wheel_smoke.sh)"
bash scripts/wheel_smoke.sh
echo "[test] whole run took $(( $(date +%s) - suite_start )) s"
