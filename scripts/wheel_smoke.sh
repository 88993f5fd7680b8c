#!/usr/bin/env bash
# The package as a user gets it: build a wheel from this checkout (pip's in-tree build: in CI, a clean clone whose
# objects scripts/setup.sh just compiled, so the wheel costs a link, not a second build; the build reads only the
# repository's own include/, never headers fetched for the compile checks), against the torch of the current
# environment, install it into a fresh virtual environment, and use it from a folder outside the checkout: import,
# doctor (every CPU part built), `python -m atb_ops demo`, `python -m atb_ops run` on an ATB-style script, a C
# program against the installed hccl.h linked with -lhccl on 2 rank processes, and a smoke subset of the tests
# against the installed package. scripts/test.sh runs it after scripts/setup.sh (--prepare beside the test suite,
# --check after it).
# ATB_OPS_WHEEL_FROM_COPY=1 builds from a fresh copy of the tracked files instead (no build/ objects: a full build).
# The two halves can run apart, in a folder the caller owns: --prepare (the wheel, the venv, every install: no rank,
# no port, no /dev/shm, so scripts/test.sh runs it beside the test suite) and --check (everything that runs ranks).
#
#   bash scripts/wheel_smoke.sh                    # exit 0: every step worked
#   bash scripts/wheel_smoke.sh --prepare DIR      # then: bash scripts/wheel_smoke.sh --check DIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { echo "[wheel] $*"; }

mode=all
case "${1:-}" in
  --prepare|--check) mode="${1#--}"; work="${2:?usage: bash scripts/wheel_smoke.sh [--prepare DIR | --check DIR]}" ;;
  "") work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT ;;
  *) echo "usage: bash scripts/wheel_smoke.sh [--prepare DIR | --check DIR]" >&2; exit 2 ;;
esac
py="$work/venv/bin/python"

prepare() {
start=$(date +%s)
src="$ROOT"
if [ "${ATB_OPS_WHEEL_FROM_COPY:-0}" = "1" ]; then
  src="$work/src"
  mkdir -p "$src"
  git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - | tar -xf - -C "$src"
  [ ! -e "$src/third_party" ] && [ ! -e "$src/build" ] || { say "the clean copy has third_party/ or build/"; exit 1; }
fi
# Nothing may point the build at fetched headers: every install builds from the repository's own include/.
# The mocks of atb_ops._testing are for the tests in the tree; a wheel leaves them out.
(cd "$src" && env -u ATB_OPS_HCCL_INCLUDE ATB_OPS_TESTING=0 python -m pip wheel -v --no-build-isolation --no-deps \
   -w "$work/dist" . > "$work/build.log" 2>&1) || { tail -n 40 "$work/build.log"; say "wheel build FAILED"; exit 1; }
wheel="$(ls "$work"/dist/atb_ops-*.whl)"
say "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) from $src in $(( $(date +%s) - start )) s"
sed -n 's/^ *\[setup\] /[wheel]   /p' "$work/build.log" | awk '!seen[$0]++'  # what the build made, and why not the optional parts
for member in atb_ops/ascend_home/lib64/libhccl.so atb_ops/ascend_home/lib64/libascendcl.so \
              atb_ops/ascend_home/include/hccl/hccl.h atb_ops/ascend_home/include/acl/acl.h \
              atb_ops/atb_home/include/atb/atb_infer.h atb_ops/atb_home/lib/libatb.so atb_ops/BUILT_PARTS.json; do
  python -c 'import sys, zipfile; sys.exit(sys.argv[2] not in zipfile.ZipFile(sys.argv[1]).namelist())' \
    "$wheel" "$member" || { say "the wheel lacks $member"; exit 1; }
done
python -c 'import sys, zipfile; sys.exit(any("_testing" in n for n in zipfile.ZipFile(sys.argv[1]).namelist()))' \
  "$wheel" || { say "the wheel holds the test mocks (atb_ops._testing)"; exit 1; }

start=$(date +%s)
python -m venv "$work/venv"
# The torch pin of requirements.txt (the CPU wheel here); atb_ops' own declared requirements do the rest; pytest
# for the smoke tests (--check). --no-compile, then every core: as in scripts/setup.sh.
"$py" -m pip install -q --no-compile "$wheel" "$(grep -E '^torch==' requirements.txt)" pytest pytest-timeout
bash "$ROOT/scripts/precompile_venv.sh" "$work/venv" | sed 's/^\[setup\]/[wheel]/'
say "installed into a fresh venv in $(( $(date +%s) - start )) s"
}

check() {
[ -x "$py" ] || { say "no venv in $work: run --prepare first"; exit 1; }

outside="$work/outside"
mkdir -p "$outside"
cp tests/emulation/atb_style/alltoallvv2_ranks.py "$outside/"
cd "$outside"
"$py" - <<'EOF'
import atb_ops, torch
assert "site-packages" in atb_ops.__file__, atb_ops.__file__
print(f"[wheel] import atb_ops {atb_ops.__version__} from {atb_ops.__file__} (torch {torch.__version__});"
      f" backends {atb_ops.backends()}")
EOF
"$py" -m atb_ops doctor > doctor.log 2>&1 || { cat doctor.log; say "doctor FAILED"; exit 1; }
for part in "HCCL's C API on CPU" "ACL runtime on CPU" "emulation libraries" "vendor headers" core; do
  grep -q "^  $part  *built " doctor.log || { cat doctor.log; say "doctor does not list '$part' as built"; exit 1; }
done
say "python -m atb_ops doctor: every CPU part built; $(awk '/^backends:/ {exit} / not built /' doctor.log | wc -l) optional part(s) not built, with reasons"
"$py" -m atb_ops demo > demo.log 2>&1 || { cat demo.log; say "demo FAILED"; exit 1; }
say "python -m atb_ops demo: ok ($(grep -c . demo.log) lines)"
"$py" -m atb_ops run alltoallvv2_ranks.py spawn > run.log 2>&1 || { cat run.log; say "run FAILED"; exit 1; }
say "python -m atb_ops run alltoallvv2_ranks.py spawn: ok ($(grep -c ' ok' run.log) rank/dtype checks)"

# HCCL's C API as a C user has it: the installed headers and -lhccl, after `eval "$(python -m atb_ops env)"`.
(
  eval "$("$py" -m atb_ops env)"
  case "$ASCEND_HOME_PATH" in "$work/venv/"*) ;; *) say "ASCEND_HOME_PATH=$ASCEND_HOME_PATH is not the venv's"; exit 1;; esac
  cc "$ROOT/tests/hccl/c_programs/hccl_allreduce_alltoallv.c" -I"$ASCEND_HOME_PATH/include" -L"$ASCEND_HOME_PATH/lib64" \
     -lhccl -o hccl_prog
  ./hccl_prog 0 2 root_info > rank0.log 2>&1 & r0=$!
  ./hccl_prog 1 2 root_info > rank1.log 2>&1 & r1=$!
  ok=1
  wait "$r0" || { cat rank0.log; ok=0; }
  wait "$r1" || { cat rank1.log; ok=0; }
  [ "$ok" = 1 ] || { say "the HCCL C program FAILED"; exit 1; }
  say "HCCL C program (-lhccl, 2 ranks): $(cat rank0.log rank1.log | tr '\n' ' ')"
)

# A smoke subset of the suite: the tests' helpers come from the checkout (rootdir), atb_ops from the venv.
"$py" -m pytest -q -p no:cacheprovider --rootdir "$ROOT" -c "$ROOT/pyproject.toml" \
  "$ROOT/tests/atb/test_alltoallvv2.py::test_seed_004_example" \
  "$ROOT/tests/atb/test_collectives.py::test_allreduce_sum" -k "seed or (small and not gloo) or not allreduce" \
  "$ROOT/tests/torch_atb/test_torch_atb.py" "$ROOT/tests/emulation/test_emulation_scripts.py::test_seed004_script_unchanged" \
  "$ROOT/tests/emulation/test_emulation_scripts.py::test_torch_atb_script" \
  "$ROOT/tests/hccl/test_vendor_api_programs.py" \
  "$ROOT/tests/atb_cpp/test_atb_cpp_api.py::test_build_line_needs_nothing_else" \
  "$ROOT/tests/atb_cpp/test_atb_cpp_api.py::test_readme_example"  # the others ran in the suite, in-tree
"$py" - "$ROOT" <<'EOF'
import sys, atb_ops
assert "site-packages" in atb_ops.__file__ and not atb_ops.__file__.startswith(sys.argv[1]), atb_ops.__file__
print(f"[wheel] the smoke tests ran against {atb_ops.__file__}")
EOF
}

[ "$mode" = check ] || prepare
[ "$mode" = prepare ] || check
