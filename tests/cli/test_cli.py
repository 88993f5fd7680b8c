"""The command line refuses bad values the way argparse does (usage, one line naming the value, exit 2),
before starting anything; never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

CASES = [
    (["demo", "--world-size", "0"], "--world-size must be between 1 and 64"),
    (["demo", "--world-size", "100000"], "--world-size must be between 1 and 64"),
    (["bench", "--pattern", "skewed", "--spread", "0"], "--spread must be >= 1 (1 is uniform), got 0"),
    (["bench", "--world-size", "0"], "--world-size must be >= 1, got 0"),
    (["bench", "--sizes", "lots"], "lots"),
    (["frobnicate"], "unknown command 'frobnicate'"),
]
if not torch.cuda.is_available():
    CASES.append((["bench", "--backend", "nccl"], "--backend nccl needs CUDA GPUs"))


@pytest.mark.parametrize("argv,message", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_values_are_usage_errors(argv, message):
    proc = subprocess.run([sys.executable, "-m", "atb_ops", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "usage:" in proc.stderr


def test_bench_help_names_every_ops_flags():
    proc = subprocess.run([sys.executable, "-m", "atb_ops", "bench", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0
    for flag in ("--op", "--api", "--pattern", "--out-dtype", "--block-size", "--path"):
        assert flag in proc.stdout, flag
