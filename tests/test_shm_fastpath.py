"""The shm backend's fast paths: eager messages through the segment, direct process_vm_readv copies,
the push/pull split of large skewed messages, buffer parity across repeated calls, concurrent
communicators. Correctness only (no timing assertions); every layout is checked element by element.

Sizes sit on the edges the implementation cares about: the eager limit (ATB_OPS_SHM_EAGER, 16384
bytes by default) +- one element, the split threshold (256 KiB) and its 4 KiB granule, odd counts
that are no multiple of any alignment, zero rows and columns.
"""

from __future__ import annotations

import pytest

from tests import fastpath_tasks
from tests.golden import DTYPES, itemsize

EAGER = 16384
SPLIT_MIN = 256 << 10


def eager_edge_matrix(n: int, es: int) -> list[list[int]]:
    """Messages of exactly the eager limit, one element under and one over, plus tiny odd ones."""
    counts = [EAGER // es - 1, EAGER // es, EAGER // es + 1, 1, 3]
    return [[counts[(i * n + j) % len(counts)] for j in range(n)] for i in range(n)]


def odd_matrix(n: int, es: int) -> list[list[int]]:
    """Counts that are no multiple of 64 bytes, a page or the split granule; some zero."""
    counts = [0, 1, 17, 1023, 4097, 65537 // es + 1, 40961]
    return [[counts[(3 * i + 5 * j) % len(counts)] for j in range(n)] for i in range(n)]


def skewed_matrix(n: int, es: int) -> list[list[int]]:
    """Everyone sends rank 0 a large message (beyond the split threshold, not granule-aligned):
    rank 0 is far busier than its senders, so they push part of their messages themselves."""
    big = (SPLIT_MIN + 3 * 4096 + 5) // es + 3
    return [[big if j == 0 else 37 + i + j for j in range(n)] for i in range(n)]


def uniform_direct_matrix(n: int, es: int) -> list[list[int]]:
    return [[(100 << 10) // es + 1] * n for _ in range(n)]


def zero_edges_matrix(n: int, es: int) -> list[list[int]]:
    """Rank 0 sends nothing and rank n-1 receives nothing; the rest mixes eager and direct."""
    m = [[(EAGER // es if (i + j) % 2 else (EAGER // es) * 3 + 1) for j in range(n)] for i in range(n)]
    for j in range(n):
        m[0][j] = 0
    for i in range(n):
        m[i][n - 1] = 0
    return m


ALL = [eager_edge_matrix, odd_matrix, skewed_matrix, uniform_direct_matrix, zero_edges_matrix]


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


def test_ranks_with_different_eager_limits(rank_pools):
    """Eager buffers are sized by the root; a rank with a larger limit falls back to direct copies."""
    n = 3
    es = itemsize("int32")
    per_rank = [({"ATB_OPS_SHM_EAGER": str(v)},) for v in (256, 65536, 16384)]
    matrices = [make(n, es) for make in ALL]
    wrong = rank_pools(n).run(
        fastpath_tasks.run_matrices, "int32", matrices, "fastpath_mixed_limits", 2, 3, per_rank=per_rank
    )
    assert wrong == [[0] * len(matrices)] * n


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
