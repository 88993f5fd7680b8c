#!/usr/bin/env bash
# README's test command: set everything up (scripts/setup.sh), lint, run the whole test suite while the vendor
# backends are compile-checked against their real headers, then the wheel. CI (.ci/run) calls this.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
suite_start=$(date +%s)
# shellcheck source=scripts/setup.sh
. scripts/setup.sh

echo "[test] ruff"
ruff check python tests scripts setup.py

echo "[test] clang-format"
mapfile -t cxx < <(git ls-files 'include/*.h' 'scripts/conformance/*.cpp' 'csrc/*.h' 'csrc/*.cpp' 'csrc/*.cu' 'csrc/*.cuh' 'op_plugin/*.cpp' 'op_plugin/*.h' 'tests/native/*.cpp' 'tests/native/*.h' 'tests/hccl/c_programs/*.c')
clang-format --dry-run --Werror "${cxx[@]}"

# The compile checks (downloads and single-threaded compilers), then the wheel's build and installs (the first half
# of scripts/wheel_smoke.sh: no rank, no port), run beside pytest, whose ranks leave about a core idle on average:
# this saves about two minutes of CI. Their output is printed, and their status decides, afterwards.
checks_log="$(mktemp)"
wheel_dir="$(mktemp -d)"
(
  for check in scripts/compile_check_*.sh; do
    [ -e "$check" ] || continue
    echo "[test] $check"
    case "$check" in
      *_hccl.sh|*_nccl.sh) bash "$check" --skip-built ;;
      *) bash "$check" ;;
    esac
  done
  echo "[test] the wheel and its fresh venv (scripts/wheel_smoke.sh --prepare)"
  bash scripts/wheel_smoke.sh --prepare "$wheel_dir"
) > "$checks_log" 2>&1 &
checks_pid=$!
trap 'kill "$checks_pid" 2>/dev/null || true; rm -rf "$checks_log" "$wheel_dir"' EXIT

echo "[test] pytest"
pytest_status=0
python -m pytest -q "$@" || pytest_status=$?
checks_status=0
wait "$checks_pid" || checks_status=$?
cat "$checks_log"
[ "$checks_status" = 0 ] || { echo "[test] a compile check or the wheel FAILED (exit $checks_status)"; exit "$checks_status"; }
[ "$pytest_status" = 0 ] || exit "$pytest_status"

echo "[test] the wheel, installed outside the checkout (scripts/wheel_smoke.sh --check)"
bash scripts/wheel_smoke.sh --check "$wheel_dir"
echo "[test] whole run took $(( $(date +%s) - suite_start )) s"
