"""atb_ops.distributed on CPU ranks: the seeds' worked examples verbatim, random layouts against numpy,
autograd (gradcheck in float64), torch.library opcheck, both CPU paths (shm and the group's gloo)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.distributed import dist_golden, dist_tasks

PATHS = ["shm", "group"]


@pytest.mark.parametrize(("path", "counts"), [("shm", "tensor"), ("group", "tensor"), ("shm", "numpy")])
def test_seed_000_global_scatter(rank_pools, path, counts):
    (a0, g0, b0), (a1, g1, b1) = rank_pools(2).run(dist_tasks.seed_000, path, counts)
    assert a0 == [[1, 2], [3, 4], [1, 2], [5, 6], [3, 4]]
    assert a1 == [[7, 8], [5, 6], [7, 8], [9, 10], [9, 10]]
    grad = [[2, 4], [6, 8], [10, 12], [14, 16], [18, 20]]
    assert g0 == grad and g1 == grad
    x = [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]
    assert b0 == x and b1 == x  # global_gather undoes global_scatter


@pytest.mark.parametrize("path", PATHS)
def test_seed_002_alltoall_single(rank_pools, path):
    (c1_0, c2_0), (c1_1, c2_1) = rank_pools(2).run(dist_tasks.seed_002, path)
    assert c1_0 == [0, 2] and c1_1 == [1, 3]
    assert c2_0 == [[0.0, 0.0], [1.0, 1.0]]
    assert c2_1 == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("path", PATHS)
def test_seed_003_deepspeed_all_to_all(rank_pools, path):
    inputs = torch.randn(4, 4, 1, 1, generator=torch.Generator().manual_seed(3))
    results = rank_pools(4).run(dist_tasks.seed_003, inputs, path)
    weights = torch.arange(1.0, 5.0).view(4, 1, 1)
    for rank, (out, grad) in enumerate(results):
        torch.testing.assert_close(out, inputs[:, rank], rtol=0, atol=0)  # row `rank` of every rank, in rank order
        # d/dx of sum(out * w): rank r's row j went to rank j's output slot r, weighted w[r].
        torch.testing.assert_close(grad, weights[rank].expand(4, 1, 1), rtol=0, atol=0)


@pytest.mark.parametrize("path", PATHS)
def test_seed_001_all_gather(rank_pools, path):
    results = rank_pools(2).run(dist_tasks.seed_001, path)
    for ones, mine in results:
        assert ones.shape == (4, 8) and bool((ones == 1).all())
        want = torch.cat([torch.arange(6, dtype=torch.int16).view(3, 2) + 100 * r for r in range(2)])
        assert torch.equal(mine, want)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("world_size", [2, 3])
def test_large_all_gather(rank_pools, world_size, path):
    assert rank_pools(world_size).run(dist_tasks.large_all_gather, path) == [0] * world_size


@pytest.mark.parametrize("path", PATHS)
def test_fresh_outputs_of_32_mib_are_advised_onto_huge_pages(rank_pools, path):
    """Outputs the communicator allocates from 32 MiB (every backend's, gloo's included) fault 2 MiB at a time."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not thp.exists() or "[never]" in thp.read_text():
        pytest.skip("no transparent huge pages on this machine: nothing to advise")
    for wrong, nbytes, advised in rank_pools(2).run(dist_tasks.huge_all_gather_output, path):
        assert wrong == 0 and advised >= nbytes - (4 << 20), (nbytes, advised)  # all but the partial 2 MiB pages


def _random_layout(rng, n):
    counts = rng.integers(0, 4, (n, n))
    counts[rng.random((n, n)) < 0.3] = 0
    counts[0, :] = 0  # rank 0 sends nothing
    layouts = []
    for r in range(n):
        send, recv = counts[r].tolist(), counts[:, r].tolist()
        order = rng.permutation(n)
        sdispls, pos = [0] * n, 0
        for j in order:
            pos += int(rng.integers(0, 3))
            sdispls[j] = pos
            pos += send[j]
        rdispls = [0] * n
        pos = 0
        for j in rng.permutation(n):
            rdispls[j] = pos
            pos += recv[j]
        layouts.append(
            (send, sdispls, recv, rdispls, pos and pos, max([s + c for s, c in zip(sdispls, send, strict=True)] + [0]))
        )
    return layouts


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_all_to_all_v_random(rank_pools, world_size, path):
    rng = np.random.default_rng(world_size)
    layouts = _random_layout(rng, world_size)
    xs = [torch.from_numpy(rng.standard_normal(lay[5] + 1)) for lay in layouts]
    outs = rank_pools(world_size).run(
        dist_tasks.alltoallv_api, per_rank=[(xs[r], layouts[r][:4], path) for r in range(world_size)]
    )
    for r, out in enumerate(outs):
        send, sdispls, recv, rdispls = layouts[r][:4]
        want = torch.empty(sum(recv), dtype=torch.float64)
        for src in range(world_size):
            s_send, s_sd = layouts[src][0], layouts[src][1]
            want[rdispls[src] : rdispls[src] + recv[src]] = xs[src][s_sd[r] : s_sd[r] + s_send[r]]
        assert out.shape == (sum(recv),)
        torch.testing.assert_close(out, want, rtol=0, atol=0)


@pytest.mark.parametrize("path", PATHS)
def test_synchronous_calls_wait_for_the_groups_asynchronous_ones(rank_pools, path):
    """A synchronous call made while an asynchronous alltoall_single waits on the group's worker thread (a backward's
    collective included) runs after it on every rank: before, each rank's calls reached the communicator in its own
    order (a mismatch error on most iterations, and, after one, calls of different iterations paired with wrong
    values and no error). torch.distributed's own call between them on the same group keeps its place too: on path
    "group", where that group carries the asynchronous call, it runs in the caller's thread (from the worker, the two
    reached the group in different orders on the ranks: a hang)."""
    n, iterations = 2, 12
    results = rank_pools(n).run(dist_tasks.async_then_synchronous_calls, iterations, path)
    for rank, per_rank in enumerate(results):
        for it, (out, torched, gathered, exchanged, summed, codes, late, grad) in enumerate(per_rank):
            want_out = torch.cat([torch.arange(4.0 * n)[4 * rank : 4 * rank + 4] + 1000 * s + it for s in range(n)])
            want_exchanged = torch.cat([torch.arange(2.0 * n)[2 * rank : 2 * rank + 2] + 100 * s + it
                                        for s in range(n)])
            assert torch.equal(out, want_out), (rank, it, out)
            assert torch.equal(torched, torch.full((2,), float(sum(s + it for s in range(n))))), (rank, it, torched)
            assert torch.equal(gathered, torch.tensor([10.0 * s + it for s in range(n)])), (rank, it, gathered)
            assert torch.equal(exchanged, want_exchanged), (rank, it, exchanged)
            assert torch.equal(summed, torch.tensor([float(sum(s + it for s in range(n)))])), (rank, it, summed)
            assert torch.equal(codes, torch.full((16,), 0.5 * sum(s + 1 for s in range(n)))), (rank, it, codes)
            want_late = torch.cat([torch.arange(4.0 * n)[4 * rank : 4 * rank + 4] + 2000 * s + it for s in range(n)])
            assert torch.equal(late, want_late), (rank, it, late)
            assert torch.equal(grad, torch.full((2,), float(n))), (rank, it, grad)


@pytest.mark.parametrize("sync_op", [True, False])
@pytest.mark.parametrize("path", PATHS)
def test_alltoall_single_uneven_rows(rank_pools, path, sync_op):
    n = 3
    rows = [[2, 0, 1], [0, 0, 0], [1, 3, 2]]  # rows[i][j]: rank i sends to j; rank 1 sends nothing
    xs = [torch.arange(sum(rows[r]) * 2, dtype=torch.int64).view(-1, 2) + 1000 * r for r in range(n)]
    per_rank = [
        (xs[r], rows[r], [rows[j][r] for j in range(n)], sum(rows[j][r] for j in range(n)), path, sync_op)
        for r in range(n)
    ]
    outs = rank_pools(n).run(dist_tasks.alltoall_single_uneven, per_rank=per_rank)
    for r, out in enumerate(outs):
        pieces = []
        for src in range(n):
            start = sum(rows[src][:r])
            pieces.append(xs[src][start : start + rows[src][r]])
        torch.testing.assert_close(out, torch.cat(pieces), rtol=0, atol=0)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("world_size", [2, 3])
def test_gradcheck(rank_pools, world_size, path):
    for results in rank_pools(world_size).run(dist_tasks.gradchecks, path):
        assert results == {
            "all_to_all_v": True,
            "global_scatter": True,
            "global_gather": True,
            "all_to_all": True,
            "all_gather": True,
            "all_reduce": True,
            "reduce_scatter": True,
        }


def test_opcheck(rank_pools):
    for checks in rank_pools(2).run(dist_tasks.opchecks):
        for op, res in checks.items():
            assert res and all(v == "SUCCESS" for v in res.values()), (op, res)


def test_bad_arguments_raise_before_communication(rank_pools):
    expected = {
        "short counts": "send_counts has 1 entries, expected 2",
        "huge count": "send_counts[0] = 9223372036854775808 does not fit int64",
        "reduce op": "op must be one of ('sum', 'prod', 'max', 'min'), got 'avg'",
        "reduce_scatter dim0": "shape [3] does not divide by group size 2",
        "broadcast src": "src must be a rank in [0, 2), got 2",
        "broadcast bool src": "src must be a rank in [0, 2), got True",
        "split count": "out_split_sizes has 3 entries, expected 2",
        "negative count": "send_counts must be >= 0, got [-1, 4]",
        "float counts": "send_counts must be an integer tensor",
        "send past x": "send region for rank 1 [sdispls[1]=6, +sendCounts[1]=4) exceeds the input's 8 elements",
        "non-contiguous": "x must be contiguous",
        "split sum": "sum(in_split_sizes)=7 but dim 0 has 8 rows: [3, 4]",
        "dtype mismatch": "out_tensor dtype torch.int32 differs from in_tensor dtype torch.float32",
        "indivisible": "dim 0 of size 9 must divide by the group size 2",
        "scatter rows": "x has 5 rows but sum(local_count)=4",
        "bool counts": "send_counts must hold ints only, got [True, 4]",
        "bool expert counts": "local_count must hold ints only, got [True, 1, 1, 1]",
        "huge expert count": "does not fit int64",
        "bool split sizes": "in_split_sizes must hold ints only, got [True, 7]",
        "count lengths": "must both have n_expert * world_size entries, world_size=2",
        "all_to_all dim0": "x.shape[0] is 3 (x.shape [3, 2]), which does not divide by the group size 2",
        "all_gather scalar": "x needs at least 1 dimension",
    }
    for messages in rank_pools(2).run(dist_tasks.bad_calls):
        for name, fragment in expected.items():
            assert fragment in messages[name], (name, messages[name])


@pytest.mark.parametrize("world_size", [2, 3])
def test_direct_path_and_dispatcher_path_match_plain_torch(rank_pools, world_size):
    """Calls that need no autograd skip the dispatcher (atb_ops._C.direct_*); both paths give the values a
    plain-torch golden computes from every rank's inputs (tests/distributed/dist_golden.py)."""
    results = rank_pools(world_size).run(dist_tasks.direct_and_dispatcher_paths_agree)
    for rank, result in enumerate(results):
        want = dist_golden.expected(rank, world_size)
        assert set(result) == set(want)
        for name, (fast, slow, flag) in result.items():
            assert torch.equal(fast, want[name]), (rank, name, "direct path", fast, want[name])
            assert torch.equal(slow, want[name]), (rank, name, "dispatcher path", slow, want[name])
            assert flag, (rank, name, "requires_grad / in place")


def test_subgroup(rank_pools):
    results = rank_pools(3).run(dist_tasks.group_subset)
    assert results[1].startswith("group: rank 1 is not a member of this group"), results[1]
    for rank in (0, 2):
        a, b = results[rank]
        other = 2 - rank
        assert a.tolist() == [0.0, 0.0, 2.0, 2.0]  # chunk 0 from rank 0, chunk 1 from rank 2
        assert b.tolist() == [[0.0, 0.0], [0.0, 0.0], [2.0, 2.0], [2.0, 2.0]]
        del other


@pytest.mark.parametrize("how", ["requires_grad", "profiler", "dispatch_mode"])
def test_ranks_on_different_paths_make_the_same_calls(rank_pools, how):
    """Rank 0 direct, rank 1 through the dispatcher (each rank picks from its own state): the same calls in
    the same order, so every value matches the plain-torch golden."""
    results = rank_pools(2).run(dist_tasks.mixed_paths, how)
    for rank, result in enumerate(results):
        want = dist_golden.expected(rank, 2)
        for name, got in result.items():
            assert torch.equal(got, want[name]), (rank, name, got, want[name])
