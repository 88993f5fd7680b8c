"""The MoE example: expert-parallel training matches one process; torch.compile matches eager;
torchrun with env:// initialisation and group=None works."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tests.distributed import dist_tasks
from tests.support.launch import free_port
from tests.support.paths import REPO_ROOT


def test_moe_demo_matches_single_process():
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "moe_demo.py"), "--world-size", "2", "--steps", "4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK, tolerance 1e-5" in proc.stdout


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_moe_layer_compiled_matches_eager(rank_pools, backend):
    for (y_eager, g_eager), (y_comp, g_comp) in rank_pools(2).run(dist_tasks.moe_compiled_vs_eager, backend):
        torch.testing.assert_close(y_comp, y_eager, rtol=1e-9, atol=1e-12)
        for a, b in zip(g_comp, g_eager, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_torchrun_env_init(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent("""
        import torch, torch.distributed as dist
        import atb_ops
        from atb_ops import distributed as ad
        dist.init_process_group("gloo")  # env:// from torchrun
        rank = dist.get_rank()
        out = ad.all_to_all_v(torch.arange(4.0) + 10 * rank, [2, 2], [0, 2], [2, 2], [0, 2])
        gathered = ad.all_gather(torch.tensor([rank]))
        print(f"RANK{rank} {out.tolist()} {gathered.tolist()}", flush=True)
        dist.destroy_process_group()
    """)
    )
    torchrun = Path(sys.executable).parent / "torchrun"
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'python'}:{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(
        [str(torchrun), "--nproc-per-node", "2", "--master-port", str(free_port()), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "RANK0 [0.0, 1.0, 10.0, 11.0] [0, 1]" in proc.stdout
    assert "RANK1 [2.0, 3.0, 12.0, 13.0] [0, 1]" in proc.stdout
