"""README's code blocks run as a new user would paste them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.environment import clean_env
from tests.support.paths import REPO_ROOT


def _block_after(heading: str) -> str:
    text = (REPO_ROOT / "README.md").read_text()
    section = text[text.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block after {heading!r}"
    return match.group(1)


def _run_block_after(heading: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """The python block after `heading`, run as a script of its own (it must exit 0)."""
    script = tmp_path / "example.py"
    script.write_text(_block_after(heading))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                          env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_the_atb_surface_example_runs_on_two_ranks(tmp_path):
    proc = _run_block_after("## The ATB surface", tmp_path)
    # The ranks' prints may interleave on the shared pipe: each line is found by its own pattern.
    lines = sorted(re.findall(r"rank \d: x=\[[^]]*\] -> out=\[\[[^]]*\]\]", proc.stdout))
    # Rank 0 gets x0[0:1] and x1[0:2]; rank 1 gets x0[1:3] and x1[2:4] (independent of atb_ops).
    assert lines == ["rank 0: x=[0.0, 1.0, 2.0] -> out=[[0.0, 100.0, 101.0]]",
                     "rank 1: x=[100.0, 101.0, 102.0, 103.0] -> out=[[1.0, 2.0, 102.0, 103.0]]"], proc.stdout
    assert proc.stdout.count('{"result": 0}') == 2


def test_the_torch_distributed_backend_example_runs_on_two_ranks(tmp_path):
    proc = _run_block_after("## torch.distributed backend", tmp_path)
    # The ranks' prints may interleave on the shared pipe: each line is found by its own pattern.
    lines = sorted(re.findall(r"rank \d: all_reduce \[[^]]*\] all_to_all_single \[[^]]*\]", proc.stdout))
    # all_reduce: 1 + 2 on both; rank 0 gets row 0 of each rank, rank 1 the rest (independent of atb_ops).
    assert lines == ["rank 0: all_reduce [3.0, 3.0, 3.0, 3.0] all_to_all_single [0.0, 10.0]",
                     "rank 1: all_reduce [3.0, 3.0, 3.0, 3.0] all_to_all_single [1.0, 11.0, 12.0]"], proc.stdout
