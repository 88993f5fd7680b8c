"""HCCL's C API on CPU from plain C++, as HCCL's samples use it: tests/native/standalone/hccl_cpu_sample.cpp is
compiled against the installed hccl/hccl.h ($ASCEND_HOME_PATH/include), linked with -lhccl
($ASCEND_HOME_PATH/lib64/libhccl.so) and run as 1-4 rank processes (root info through a file); each process
checks every result against values it computes itself."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from atb_ops.emulation import atb_home
from tests.support.launch import run_programs
from tests.support.paths import REPO_ROOT

ASCEND_HOME = atb_home.packaged_ascend_home()
SAMPLE = REPO_ROOT / "tests/native/standalone/hccl_cpu_sample.cpp"

pytestmark = [
    pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler"),
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    assert ASCEND_HOME is not None, "this install has no atb_ops/ascend_home (every build makes it)"
    exe = tmp_path_factory.mktemp("hccl_sample") / "hccl_cpu_sample"
    lib64 = f"{ASCEND_HOME}/lib64"
    # As a user builds against CANN: the headers and -lhccl; torch's libraries are libhccl.so's own business.
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror",
           f"-I{ASCEND_HOME}/include", str(SAMPLE), "-o", str(exe), f"-L{lib64}", "-lhccl", f"-Wl,-rpath,{lib64}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_hccl_sample_program_runs_every_collective(sample, tmp_path, world_size):
    root_info = tmp_path / "root_info.bin"
    env = {**os.environ, "ATB_OPS_TIMEOUT": "60"}
    exits = run_programs(lambda r: [sample, str(r), str(world_size), root_info], world_size, env, timeout_s=120)
    counts = set()
    for rank, e in enumerate(exits):
        assert e.returncode == 0, f"rank {rank} exited {e.returncode}: {e.stdout}{e.stderr[-3000:]}"
        line = e.last_line()
        assert line.startswith(f"rank {rank}: ") and line.endswith(" checks passed"), e.stdout
        counts.add(int(line.split()[2]))
    # Every rank made every check it should (ranks 0 and 1 also run the plain Send/Recv pair).
    assert min(counts) >= 20, counts


def test_hccl_sample_peer_that_never_comes_times_out_naming_it(sample, tmp_path):
    """Rank 1 of 2 never starts: rank 0's HcclCommInitRootInfo returns HCCL_E_TIMEOUT, with the full text."""
    env = {**os.environ, "ATB_OPS_TIMEOUT": "2"}
    proc = subprocess.run([str(sample), "0", "2", str(tmp_path / "root_info.bin")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "HcclCommInitRootInfo returned 9 (timeout)" in proc.stderr, proc.stderr
    assert "rank(s) 1 did not join" in proc.stderr, proc.stderr
