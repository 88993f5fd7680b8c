#!/usr/bin/env bash
# Conformance of atb_ops' own vendor API headers (include/: hccl/, acl/, atb/) with the vendors' headers.
#
# scripts/conformance/vendor_facts.cpp lists every declaration of ours that programs depend on; it is compiled
# and run once against the vendor's headers and once against ours, and the two tables (function types, constant
# and enumerator values, struct sizes, field types / offsets / defaults, vtable slots) must be identical.
#
#  - HCCL and ACL: against the torch_npu==2.13.0 wheel's hccl/ and acl/ headers (scripts/fetch_hccl_headers.sh
#    downloads the wheel with pip and unpacks its headers into third_party/, gitignored; never installed).
#    Our headers are also compiled as C (C99, -pedantic), which the vendor's are not.
#  - ATB: ATB's headers are not on any package registry, so the table of ATB's own headers is kept in
#    scripts/conformance/atb_facts.txt (recorded from hicann/ascend-transformer-boost; the commit is on its first
#    line) and ours is compared with it everywhere. Where a checkout of ATB is present (ATB_OPS_ATB_SRC=<dir>, or
#    --atb-src DIR), the table is also made from it and compared with ours and with the record, so a change in
#    ATB shows; --record rewrites the record from that checkout.
#
#   bash scripts/compile_check_vendor_headers.sh [--atb-src DIR] [--record]
# Exits non-zero on any difference or failure. scripts/test.sh runs it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { echo "[vendor-headers] $*"; }

ATB_SRC="${ATB_OPS_ATB_SRC:-}"
RECORD=0
while [ $# -gt 0 ]; do
  case "$1" in
    --atb-src) ATB_SRC="$2"; shift 2 ;;
    --record) RECORD=1; shift ;;
    *) echo "usage: $0 [--atb-src DIR] [--record]" >&2; exit 2 ;;
  esac
done

CXX="${CXX:-g++}"
CC="${CC:-gcc}"
FACTS="scripts/conformance/vendor_facts.cpp"
ATB_RECORD="scripts/conformance/atb_facts.txt"
# A fixed dialect and ABI, so the tables do not depend on the environment (std::string's name, layouts).
FLAGS=(-std=c++17 -O0 -D_GLIBCXX_USE_CXX11_ABI=1 -Wall -Wextra -Werror)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0

# facts NAME DEFINE INCLUDE_FLAGS...: compiles the table program against one header set and runs it.
facts() {
  local name="$1" define="$2"
  shift 2
  if ! "$CXX" "${FLAGS[@]}" "-D$define" "$@" "$FACTS" -o "$work/$name" > "$work/$name.log" 2>&1; then
    say "FAIL  $name: $FACTS does not compile:"
    grep -v "^In file included\|^ *from " "$work/$name.log" | head -n 40 | sed 's/^/    /'
    return 1
  fi
  "$work/$name" > "$work/$name.txt"
}

# same LABEL A B: the two tables must be identical; prints the differing lines when they are not.
same() {
  local label="$1" a="$2" b="$3"
  if diff -u "$a" "$b" > "$work/diff.txt"; then
    say "ok    $label ($(grep -c . "$b") facts identical)"
  else
    say "FAIL  $label differ (- $(basename "$a"), + $(basename "$b")):"
    grep '^[-+][^-+]' "$work/diff.txt" | head -n 60 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

# --- HCCL and the ACL runtime: against the torch_npu wheel's headers ---
NPU_INC="$(bash scripts/fetch_hccl_headers.sh | tail -n 1)"
VENDOR_C=(-isystem "$NPU_INC" -isystem "$NPU_INC/third_party/hccl/inc" -isystem "$NPU_INC/third_party/acl/inc")
facts vendor_c_apis FACTS_C_APIS "${VENDOR_C[@]}" || exit 1
facts ours_c_apis FACTS_C_APIS -I include || exit 1
same "HCCL and ACL: include/{hccl,acl} vs torch_npu 2.13.0's headers" "$work/vendor_c_apis.txt" "$work/ours_c_apis.txt"

printf '#include <acl/acl.h>\n#include <hccl/hccl.h>\nint main(void) { HcclCommConfig c; HcclCommConfigInit(&c); return 0; }\n' \
  > "$work/as_c.c"
if "$CC" -std=c99 -pedantic -Wall -Wextra -Werror -I include -fsyntax-only "$work/as_c.c" 2> "$work/as_c.log"; then
  say "ok    include/{hccl,acl} compile as C99 (-pedantic -Werror)"
else
  say "FAIL  include/{hccl,acl} do not compile as C99:"; sed 's/^/    /' "$work/as_c.log" | head -n 20
  failed=$((failed + 1))
fi

# --- ATB's C++ API ---
facts ours_atb FACTS_ATB -I include || exit 1
if [ -n "$ATB_SRC" ]; then
  [ -f "$ATB_SRC/include/atb/atb_infer.h" ] || { say "FAIL  $ATB_SRC has no include/atb/atb_infer.h"; exit 1; }
  # ATB's types.h includes aclnn/acl_meta.h for types that none of our declarations use: opaque stand-ins.
  mkdir -p "$work/shim/aclnn"
  printf 'typedef struct aclTensor aclTensor;\ntypedef struct aclIntArray aclIntArray;\ntypedef struct aclTensorList aclTensorList;\n' \
    > "$work/shim/aclnn/acl_meta.h"
  facts vendor_atb FACTS_ATB -isystem "$ATB_SRC/include" -isystem "$work/shim" "${VENDOR_C[@]}" || exit 1
  commit="$(git -C "$ATB_SRC" rev-parse --short HEAD 2>/dev/null || echo "unknown commit")"
  same "ATB: include/atb vs $ATB_SRC/include/atb ($commit)" "$work/vendor_atb.txt" "$work/ours_atb.txt"
  if [ "$RECORD" = 1 ]; then
    { echo "# ATB's include/atb as scripts/conformance/vendor_facts.cpp sees it: hicann/ascend-transformer-boost $commit, $("$CXX" --version | head -n 1)"
      cat "$work/vendor_atb.txt"; } > "$ATB_RECORD"
    say "recorded $ATB_RECORD from $ATB_SRC ($commit)"
  fi
  same "ATB: $ATB_SRC vs the record $ATB_RECORD" <(tail -n +2 "$ATB_RECORD") "$work/vendor_atb.txt"
else
  [ "$RECORD" = 0 ] || { say "FAIL  --record needs an ATB checkout (--atb-src DIR or ATB_OPS_ATB_SRC)"; exit 1; }
  say "ATB's headers are not here (no ATB_OPS_ATB_SRC / --atb-src): include/atb is compared with the facts recorded"
  say "      from ATB's own headers in $ATB_RECORD ($(head -n 1 "$ATB_RECORD" | sed 's/.*boost //; s/,.*//'))"
fi
same "ATB: include/atb vs the record $ATB_RECORD" <(tail -n +2 "$ATB_RECORD") "$work/ours_atb.txt"

if [ "$failed" -ne 0 ]; then
  say "FAILED: $failed comparison(s) differ"
  exit 1
fi
say "all vendor headers of include/ conform"
