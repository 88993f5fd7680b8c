"""HCCL's C API on CPU from plain C++, as HCCL's samples use it: tests/native/standalone/hccl_cpu_sample.cpp is
compiled against hccl.h, linked against libatb_ops_hccl_cpu.so and run as 1-4 rank processes (root info
through a file); each process checks every result against values it computes itself."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import atb_ops

ROOT = Path(__file__).resolve().parent.parent
LIB_DIR = Path(atb_ops.__file__).resolve().parent / "lib"
LIBRARY = LIB_DIR / "libatb_ops_hccl_cpu.so"
SAMPLE = ROOT / "tests/native/standalone/hccl_cpu_sample.cpp"


def _hccl_include() -> str | None:
    """The include folder the build used (setup.py's rule: ATB_OPS_HCCL_INCLUDE, else third_party/torch_npu-*)."""
    explicit = os.environ.get("ATB_OPS_HCCL_INCLUDE")
    candidates = [explicit] if explicit else sorted(glob.glob(str(ROOT / "third_party/torch_npu-*/torch_npu/include")))
    for folder in candidates:
        if folder and (Path(folder) / "third_party/hccl/inc/hccl/hccl.h").is_file():
            return folder
    return None


pytestmark = [
    pytest.mark.skipif(not LIBRARY.is_file(), reason="libatb_ops_hccl_cpu.so was not built (no HCCL headers)"),
    pytest.mark.skipif(_hccl_include() is None, reason="HCCL headers not found (scripts/fetch_hccl_headers.sh)"),
    pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler"),
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    include = _hccl_include()
    torch_lib = Path(torch.__file__).resolve().parent / "lib"
    exe = tmp_path_factory.mktemp("hccl_sample") / "hccl_cpu_sample"
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror",
           f"-I{include}", f"-I{include}/third_party/acl/inc", str(SAMPLE), "-o", str(exe),
           f"-L{LIB_DIR}", "-latb_ops_hccl_cpu",
           # torch's libraries are the library's dependencies, found next to it in an installed tree; here
           # the program loads them itself (the library's RUNPATH is only its own folder).
           f"-L{torch_lib}", "-Wl,--no-as-needed", "-lc10", "-ltorch_cpu", "-Wl,--as-needed",
           f"-Wl,-rpath,{LIB_DIR}", f"-Wl,-rpath,{torch_lib}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return exe


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_hccl_sample_program_runs_every_collective(sample, tmp_path, world_size):
    root_info = tmp_path / "root_info.bin"
    env = {**os.environ, "ATB_OPS_TIMEOUT": "60"}
    procs = [subprocess.Popen([str(sample), str(r), str(world_size), str(root_info)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for r in range(world_size)]
    outputs = [p.communicate(timeout=120) for p in procs]
    counts = set()
    for rank, (p, (out, err)) in enumerate(zip(procs, outputs, strict=True)):
        assert p.returncode == 0, f"rank {rank} exited {p.returncode}: {out}{err[-3000:]}"
        line = out.strip().splitlines()[-1]
        assert line.startswith(f"rank {rank}: ") and line.endswith(" checks passed"), out
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
