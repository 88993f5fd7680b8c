#!/usr/bin/env bash
# The package as a user gets it: build a wheel (against the torch of the current environment, reusing the
# in-place build's objects), install it into a fresh virtual environment, and use it from a folder outside
# the checkout: import, `python -m atb_ops demo`, `python -m atb_ops run` on an ATB-style script, and a
# smoke subset of the tests against the installed package. scripts/test.sh runs it after scripts/setup.sh.
#
#   bash scripts/wheel_smoke.sh            # exit 0: every step worked
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { echo "[wheel] $*"; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
# The mocks of atb_ops._testing are for the tests in the tree; a wheel leaves them out.
ATB_OPS_TESTING=0 python -m pip wheel -q --no-build-isolation --no-deps -w "$work/dist" . > "$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log"; say "wheel build FAILED"; exit 1; }
wheel="$(ls "$work"/dist/atb_ops-*.whl)"
say "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) in $(( $(date +%s) - start )) s"

start=$(date +%s)
python -m venv "$work/venv"
# The torch pin of requirements.txt (the CPU wheel here); atb_ops' own declared requirements do the rest.
"$work/venv/bin/python" -m pip install -q "$wheel" "$(grep -E '^torch==' requirements.txt)"
say "installed into a fresh venv in $(( $(date +%s) - start )) s"

outside="$work/outside"
mkdir -p "$outside"
cp tests/atb_style/alltoallvv2_ranks.py "$outside/"
cd "$outside"
py="$work/venv/bin/python"
"$py" - <<'EOF'
import atb_ops, torch
assert "site-packages" in atb_ops.__file__, atb_ops.__file__
print(f"[wheel] import atb_ops {atb_ops.__version__} from {atb_ops.__file__} (torch {torch.__version__});"
      f" backends {atb_ops.backends()}")
EOF
"$py" -m atb_ops demo > demo.log 2>&1 || { cat demo.log; say "demo FAILED"; exit 1; }
say "python -m atb_ops demo: ok ($(grep -c . demo.log) lines)"
"$py" -m atb_ops run alltoallvv2_ranks.py spawn > run.log 2>&1 || { cat run.log; say "run FAILED"; exit 1; }
say "python -m atb_ops run alltoallvv2_ranks.py spawn: ok ($(grep -c ' ok' run.log) rank/dtype checks)"

# A smoke subset of the suite: the tests' helpers come from the checkout (rootdir), atb_ops from the venv.
"$py" -m pip install -q pytest pytest-timeout
"$py" -m pytest -q -p no:cacheprovider --rootdir "$ROOT" -c "$ROOT/pyproject.toml" \
  "$ROOT/tests/test_alltoallvv2.py::test_seed_004_example" \
  "$ROOT/tests/test_collectives.py::test_allreduce_sum" -k "seed or (small and not gloo) or not allreduce" \
  "$ROOT/tests/test_torch_atb.py" "$ROOT/tests/test_emulation_scripts.py::test_seed004_script_unchanged" \
  "$ROOT/tests/test_emulation_scripts.py::test_torch_atb_script"  # the others ran in the suite, in-tree
"$py" - "$ROOT" <<'EOF'
import sys, atb_ops
assert "site-packages" in atb_ops.__file__ and not atb_ops.__file__.startswith(sys.argv[1]), atb_ops.__file__
print(f"[wheel] the smoke tests ran against {atb_ops.__file__}")
EOF
