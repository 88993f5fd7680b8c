"""AllToAllVV2Operation through the ATB surface, on every CPU backend, against a numpy golden.

One parametrized suite: backends x dtypes x size patterns x world sizes, plus the seed's example.
Outputs written through execute_out start as a sentinel, so an element nobody wrote is caught.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from tests.atb import rank_tasks
from tests.support.backends import CPU_BACKENDS
from tests.support.golden import DTYPES, bits_view, count_matrix, golden_alltoallv, random_payload, rank_layouts

BACKENDS = CPU_BACKENDS
PATTERNS = ["uniform", "skewed", "zero"]
MODES = ["execute", "pack", "out", "noncontig", "both"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_seed_004_example(rank_pools, backend, dtype_name):
    """Seed 004: rank 0 -> [[0, 1, 0, 1]], rank 1 -> [[2, 3, 4, 5, 2]], shapes [1, 4] and [1, 5]."""
    results = rank_pools(2).run(rank_tasks.run_seed_004, backend, dtype_name)
    expected = [[[0, 1, 0, 1]], [[2, 3, 4, 5, 2]]]
    for rank, (dtype, shape, values) in enumerate(results):
        assert dtype == str(DTYPES[dtype_name])
        assert shape == [1, len(expected[rank][0])]
        golden = np.array(expected[rank], dtype=np.float64)
        if dtype_name == "bool":
            golden = (golden != 0).astype(np.float64)
        np.testing.assert_array_equal(np.array(values), golden)


def _run_case(pool, backend, dtype_name, pattern, mode, seed, gaps=True, overlap=False, scale=7, domain=""):
    n = pool.world_size
    rng = np.random.default_rng(seed)
    layouts = rank_layouts(rng, count_matrix(rng, n, pattern, scale), gaps=gaps, overlap=overlap)
    payloads = [random_payload(rng, lay.send_numel, dtype_name) for lay in layouts]
    per_rank = []
    for lay, payload in zip(layouts, payloads, strict=True):
        shape = (lay.send_numel,) if lay.send_numel % 2 else (2, lay.send_numel // 2)
        per_rank.append((payload, shape, lay.send_counts, lay.sdispls, lay.recv_counts, lay.rdispls))
    outs = pool.run(rank_tasks.run_alltoallvv2, backend, dtype_name, mode, domain, per_rank=per_rank)
    for rank, (got, want) in enumerate(zip(outs, golden_alltoallv(payloads, layouts, dtype_name), strict=True)):
        np.testing.assert_array_equal(bits_view(got, dtype_name), want, err_msg=f"rank {rank}")


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_random_layouts(rank_pools, backend, dtype_name, pattern, world_size):
    """Shuffled displacements with gaps; output pre-filled with a sentinel (execute_out)."""
    seed = zlib.crc32(repr((backend, dtype_name, pattern, world_size)).encode())  # the same in every process
    _run_case(rank_pools(world_size), backend, dtype_name, pattern, "out", seed)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("world_size", [2, 3])
def test_input_modes(rank_pools, backend, mode, world_size):
    """Counts as tensors, as a variant pack, both, into a given output, from a non-contiguous x."""
    _run_case(rank_pools(world_size), backend, "float32", "skewed", mode, seed=17 + world_size)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("world_size", [1, 4])
def test_strided_input_at_the_other_world_sizes(rank_pools, backend, world_size):
    """x a stride-2 view (test_input_modes covers 2 and 3 ranks): made contiguous as ATB's binding does."""
    _run_case(rank_pools(world_size), backend, "float32", "skewed", "noncontig", seed=29 + world_size)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("world_size", [2, 4])
def test_overlapping_send_regions(rank_pools, backend, world_size):
    """Send regions may overlap (ATB allows it); each receiver still gets its own slice."""
    for seed in range(3):
        _run_case(rank_pools(world_size), backend, "int16", "uniform", "execute", seed, overlap=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_large_messages(rank_pools, backend):
    """Megabytes per peer: copies that do not fit one syscall page or one staging chunk."""
    _run_case(rank_pools(2), backend, "bfloat16", "skewed", "out", seed=5, scale=300_001)


def test_separate_comm_domains(rank_pools):
    """Two commDomains are two communicators; both work and give the same answer."""
    for domain in ("expert_group_a", "expert_group_b"):
        _run_case(rank_pools(3), "shm", "int32", "skewed", "execute", seed=3, domain=domain)


def test_all_ranks_receive_nothing(rank_pools):
    """sum(recvCounts) == 0 on every rank gives [1, 0] outputs (ATB would reject; MoE needs it)."""
    pool = rank_pools(2)
    empty = (b"", (0,), [0, 0], [0, 0], [0, 0], [0, 0])
    outs = pool.run(rank_tasks.run_alltoallvv2, "shm", "float16", "execute", "", per_rank=[empty, empty])
    assert outs == [b"", b""]


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_element_views_of_stride_two(rank_pools, backend):
    """Rank 0's x and rank 1's output are one-element views of stride 2 (x[::2] of two elements), which torch
    calls contiguous; the other direction carries 100000 floats, too many to travel inside gloo's call check, so
    the data goes through gloo's own all-to-all (it took a byte view that needs stride 1 and raised)."""
    big = 100_000
    received = rank_pools(2).run(rank_tasks.run_one_element_strided, backend, big)
    assert received[0] == (np.arange(big, dtype=np.float32) + 0.5).tolist()
    assert received[1] == [7.0]
