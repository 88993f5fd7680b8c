#!/usr/bin/env bash
# README's main command: set everything up, then run the AllToAllVV2 demo on CPU ranks.
# Extra arguments go to `python -m atb_ops demo` (e.g. --world-size 4 --backend gloo).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/setup.sh
. scripts/setup.sh
python -m atb_ops demo "$@"
