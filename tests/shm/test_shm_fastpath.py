"""The shm backend's fast paths: eager messages through the segment, direct process_vm_readv copies,
the push/pull split of large skewed messages, buffer parity across repeated calls, concurrent
communicators. Correctness only (no timing assertions); every layout is checked element by element.

Sizes sit on the edges the implementation cares about (tests/shm/layouts.py).
"""

from __future__ import annotations

import pytest

from tests.shm import fastpath_tasks
from tests.shm.layouts import ALL, eager_edge_matrix, odd_matrix, skewed_matrix
from tests.support.golden import DTYPES, itemsize
from tests.support.launch import run_spawned


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_edges_every_dtype(rank_pools, world_size, dtype_name):
    """Every edge layout, every dtype, 1-4 ranks; per layout execute_out then execute on one operation."""
    es = itemsize(dtype_name)
    matrices = [make(world_size, es) for make in ALL]
    wrong = rank_pools(world_size).run(fastpath_tasks.run_matrices, dtype_name, matrices, "", 2, 1)
    assert wrong == [[0] * len(matrices)] * world_size


@pytest.mark.parametrize(
    "env",
    [
        {"ATB_OPS_SHM_EAGER": "0"},  # everything direct
        {"ATB_OPS_SHM_SPLIT": "0"},  # receivers pull everything
        {"ATB_OPS_SHM_EAGER": "1048576"},  # large eager messages overflow the segment's eager buffer
    ],
    ids=["no-eager", "no-split", "eager-overflow"],
)
@pytest.mark.parametrize("world_size", [2, 4])
def test_switches(rank_pools, world_size, env):
    """The same layouts with the fast paths turned off, or the eager buffer overrun (falls back to direct)."""
    es = itemsize("float16")
    matrices = [make(world_size, es) for make in ALL]
    domain = "fastpath_" + "_".join(f"{k}={v}" for k, v in env.items())
    wrong = rank_pools(world_size).run(fastpath_tasks.run_matrices, "float16", matrices, domain, 2, 7, env)
    assert wrong == [[0] * len(matrices)] * world_size


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_pack_loop_reuses_buffers(rank_pools, world_size):
    """The benchmark's call: variant pack once, execute_out([x, infer], [out]) 40 times, new data each call."""
    small = [[64 + i + j for j in range(world_size)] for i in range(world_size)]
    large = skewed_matrix(world_size, 4)
    for matrix in (small, large):
        wrong = rank_pools(world_size).run(fastpath_tasks.run_pack_loop, "float32", matrix, "fastpath_pack", 40)
        assert wrong == [0] * world_size


@pytest.mark.parametrize("world_size", [2, 3])
def test_concurrent_comm_domains(rank_pools, world_size):
    """Three communicators (commDomains) driven at once by three threads of every rank."""
    matrices = [eager_edge_matrix(world_size, 4), skewed_matrix(world_size, 4), odd_matrix(world_size, 4)]
    wrong = rank_pools(world_size).run(fastpath_tasks.run_concurrent_domains, matrices, 12)
    assert wrong == [[0, 0, 0]] * world_size


@pytest.mark.parametrize("value", ["lots", "-1", "2000000"])
def test_bad_eager_setting_is_named(rank_pools, value):
    (message,) = rank_pools(1).run(fastpath_tasks.bad_eager_setting, value)
    assert "ERROR_INVALID_PARAM" in message and "ATB_OPS_SHM_EAGER" in message and value in message


def test_waiting_ranks_sleep(rank_pools):
    """4 ranks on this machine's cores, one arriving 1 s late: the others spin/yield for about 1 ms, then
    sleep on the futex, so they use a small fraction of a core while they wait (a CPU-use bound, not speed)."""
    results = rank_pools(4).run(fastpath_tasks.late_rank_cpu, 1.0)
    for rank, (wall, cpu) in enumerate(results[1:], start=1):
        assert wall > 0.5, (rank, wall)  # it did wait for rank 0
        assert cpu < 0.25 * wall, f"rank {rank} used {cpu:.3f} s of CPU while waiting {wall:.3f} s"


@pytest.mark.parametrize("world_size", [2, 3, 4])
@pytest.mark.parametrize("alloc", ["send", "recv", "both"])
def test_arena_buffers(rank_pools, world_size, alloc):
    """Send buffers and/or outputs from atb_ops.shm_empty: peers memcpy through their mapping of the arena
    (pull when the send buffer is shared, else push into a shared output), mixed with eager and
    process_vm_readv messages, for every edge layout, through execute_out and execute."""
    es = itemsize("bfloat16")
    matrices = [make(world_size, es) for make in ALL]
    wrong = rank_pools(world_size).run(
        fastpath_tasks.run_matrices, "bfloat16", matrices, "fastpath_arena", 2, 5, None, alloc
    )
    assert wrong == [[0] * len(matrices)] * world_size


def test_arena_mixed_per_rank(rank_pools):
    """Some ranks use shared buffers and some do not: every pair picks its route from the posted matrix."""
    n = 4
    matrices = [make(n, 4) for make in ALL]
    per_rank = [(None, alloc) for alloc in ("both", "", "send", "recv")]
    wrong = rank_pools(n).run(fastpath_tasks.run_matrices, "float32", matrices, "fastpath_mixed", 2, 9,
                              per_rank=per_rank)
    assert wrong == [[0] * len(matrices)] * n


def test_arena_pack_loop(rank_pools):
    for alloc in ("both", "recv"):
        wrong = rank_pools(2).run(fastpath_tasks.run_pack_loop, "float32", skewed_matrix(2, 4), "fastpath_pack", 30,
                                  alloc)
        assert wrong == [0, 0]


def test_execute_output_comes_from_the_arena(rank_pools):
    states = rank_pools(2).run(fastpath_tasks.arena_state)
    for s in states:
        assert s["info"]["enabled"] and s["output_shared"] and s["wrong"] == 0


_ARENA_SCRIPT = """
import json, os, sys, torch, atb_ops
info = atb_ops.shm_arena_info()
out = {"enabled": info["enabled"], "reserved": info["reserved_bytes"]}
if info["enabled"]:
    blocks = [atb_ops.shm_empty(256 * 1024, dtype=torch.uint8) for _ in range(4)]
    out["four_fit"] = all(atb_ops.shm_is_shared(b) for b in blocks)
    extra = atb_ops.shm_empty(4096, dtype=torch.uint8)
    out["full_falls_back"] = not atb_ops.shm_is_shared(extra) and extra.numel() == 4096
    del blocks[1:3]  # two neighbours: coalesced into one 512 KiB block
    big = atb_ops.shm_empty(512 * 1024, dtype=torch.uint8)
    out["coalesced"] = atb_ops.shm_is_shared(big)
    del blocks, big, extra
    out["used_after_free"] = atb_ops.shm_arena_info()["used_bytes"]
    t = atb_ops.shm_empty(2, 3, dtype=torch.float16)
    out["shape"] = [list(t.shape), str(t.dtype), atb_ops.shm_is_shared(t)]
    pid = os.fork()  # a child shares the parent's arena mapping but must not allocate from it
    if pid == 0:
        os._exit(0 if not atb_ops.shm_is_shared(atb_ops.shm_empty(8)) else 3)
    out["fork_child_allocates_elsewhere"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
print(json.dumps(out))
"""


def _arena_probe(arena_bytes: str) -> dict:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "ATB_OPS_SHM_ARENA": arena_bytes}
    proc = subprocess.run([sys.executable, "-c", _ARENA_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_arena_allocator_fills_falls_back_and_coalesces():
    got = _arena_probe(str(1 << 20))
    assert got == {"enabled": True, "reserved": 1 << 20, "four_fit": True, "full_falls_back": True,
                   "coalesced": True, "used_after_free": 0, "shape": [[2, 3], "torch.float16", True],
                   "fork_child_allocates_elsewhere": True}


def test_arena_off():
    assert _arena_probe("0") == {"enabled": False, "reserved": 0}


def test_arena_off_on_one_rank_turns_the_arena_routes_off():
    import uuid

    n = 2
    matrices = [make(n, 4) for make in ALL]
    job = f"fastpath-{uuid.uuid4().hex}"
    got = run_spawned(fastpath_tasks.arena_off_on_rank0_main, n, (job, matrices), timeout_s=120)
    assert got[0][0] == [0] * len(matrices), got[0][0]
    assert got[1][0] == [0] * len(matrices), got[1][0]
    assert not got[0][1]["info"]["enabled"] and got[1][1]["info"]["enabled"]
    assert not got[0][1]["output_shared"] and not got[1][1]["output_shared"]  # nobody could reach rank 0
    assert got[0][1]["wrong"] == 0 and got[1][1]["wrong"] == 0
