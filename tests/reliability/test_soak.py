"""A short soak in CI: scripts/soak.py with 1500 executes of varying sizes (0 to 32 KiB per peer).

Bounds: after a 200-call warm-up, RSS grows by at most 16 MiB per rank (the allocator may keep its
largest buffers; a leak of the per-call buffers, up to 64 KiB, would pass that within 256 calls) and the open
descriptors stay exactly equal; every checked output is right.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import REPO_ROOT

SOAK = REPO_ROOT / "scripts" / "soak.py"


@pytest.mark.parametrize("backend", ["shm", "gloo"])
def test_short_soak_is_flat(backend):
    proc = subprocess.run(
        [sys.executable, str(SOAK), "--iters", "1500", "--max-per-peer", "8192", "--backend", backend],
        capture_output=True,
        text=True,
        timeout=600,
    )
    ranks = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(ranks) == 2, proc.stdout + proc.stderr
    for r in ranks:
        assert r["wrong"] == 0, r
        assert r["fds_end"] == r["fds_start"], r
        assert r["rss_end_mib"] - r["rss_start_mib"] <= 16.0, r
    assert proc.returncode == 0, proc.stdout + proc.stderr
