"""README's main command: `python -m atb_ops demo` prints the seed's outputs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from atb_ops import demo


@pytest.mark.parametrize("backend", ["shm", "gloo"])
def test_demo_prints_seed_outputs(backend):
    proc = subprocess.run(
        [sys.executable, "-m", "atb_ops", "demo", "--backend", backend],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "rank 0 output [[0, 1, 0, 1]]  shape [1, 4]" in proc.stdout
    assert "rank 1 output [[2, 3, 4, 5, 2]]  shape [1, 5]" in proc.stdout
    assert "rank 0 input  [[0, 1, 2, 3], [4, 5, 6, 7]]" in proc.stdout


def test_demo_n_ranks_matches_pattern(capsys):
    """For N ranks every rank gets, from each rank j in order, the slice j addressed to it."""
    outputs = demo.run(world_size=4)
    for rank, out in enumerate(outputs):
        want = []
        for src in range(4):
            x, sc, sd, _, _ = demo.pattern_layout(src, 4)
            want += x[0][sd[rank] : sd[rank] + sc[rank]]
        assert out == [want]
    assert "rank 3 output" in capsys.readouterr().out


def test_cli_help_lists_commands():
    proc = subprocess.run([sys.executable, "-m", "atb_ops", "--help"], capture_output=True, text=True, check=True)
    assert "demo" in proc.stdout
