"""Which route the shm backend really took: the per-communicator counters (atb_ops._C.communicator_stats) show
that the eager buffers, the sender-side push of the split, the arena memcpy and the reduction pipeline run
when they should and stay idle when turned off. Right data alone cannot show it: each path's fallback gives
the same data. Also the split planner on its own, against expectations written from its contract."""

from __future__ import annotations

import uuid

import pytest

from tests.shm import fastpath_tasks
from tests.shm.layouts import EAGER, STREAMING_OUTPUT, skewed_matrix, streaming_matrix, uniform_direct_matrix
from tests.support.golden import itemsize

try:
    from atb_ops import _testing
except ImportError:  # pragma: no cover - built unless ATB_OPS_TESTING=0
    _testing = None


def _run(pool, matrix, env=None, alloc=""):
    domain = "routes-" + uuid.uuid4().hex[:8]
    stats = pool.run(fastpath_tasks.route_counters, "float32", matrix, domain, env, alloc)
    assert [s["wrong"] for s in stats] == [0] * len(stats), stats
    return stats


def test_small_messages_travel_eager(rank_pools):
    stats = _run(rank_pools(2), [[16, 16], [16, 16]])
    assert all(s["eager_bytes"] == 16 * 4 and s["memcpy_bytes"] + s["vm_bytes"] == 0 for s in stats), stats


def test_eager_off_sends_small_messages_directly(rank_pools):
    stats = _run(rank_pools(2), [[16, 16], [16, 16]], {"ATB_OPS_SHM_EAGER": "0"})
    assert all(s["eager_bytes"] == 0 and s["vm_bytes"] == 16 * 4 for s in stats), stats


def test_messages_over_the_eager_limit_go_direct(rank_pools):
    n = EAGER // 4 + 1
    stats = _run(rank_pools(2), [[4, n], [n, 4]])
    assert all(s["eager_bytes"] == 0 and s["vm_bytes"] == n * 4 for s in stats), stats


def test_busy_receiver_gets_help_from_its_sender(rank_pools):
    """Skewed: everyone sends rank 0 a message over the split threshold: senders push a part themselves."""
    stats = _run(rank_pools(3), skewed_matrix(3, 4))
    assert stats[0]["pushed_bytes"] == 0, stats  # rank 0 is the busy one: it pushes nothing
    assert all(s["pushed_bytes"] > 0 for s in stats[1:]), stats


def test_split_off_leaves_all_pulling_to_the_receiver(rank_pools):
    stats = _run(rank_pools(3), skewed_matrix(3, 4), {"ATB_OPS_SHM_SPLIT": "0"})
    assert all(s["pushed_bytes"] == 0 for s in stats), stats


@pytest.mark.parametrize("alloc", ["both", "send", "recv"])
def test_arena_buffers_move_by_memcpy(rank_pools, alloc):
    """With send buffers or outputs in the arena, direct messages go by memcpy through the mapping."""
    stats = _run(rank_pools(2), uniform_direct_matrix(2, 4), alloc=alloc)
    for s in stats:
        assert s["memcpy_bytes"] > 0 and s["vm_bytes"] == 0, s


def test_ordinary_buffers_move_by_process_vm(rank_pools):
    stats = _run(rank_pools(2), uniform_direct_matrix(2, 4), alloc="")
    assert all(s["vm_bytes"] > 0 and s["memcpy_bytes"] == 0 for s in stats), stats


@pytest.mark.parametrize("alloc", ["", "both"])
def test_outputs_of_16_mib_are_written_around_the_caches(rank_pools, alloc):
    """Outputs of 16 MiB and more: the self copy (and with arena buffers the peers' memcpys) use non-temporal
    stores, from odd offsets; the values are still every sender's."""
    matrix = streaming_matrix(2, 4)
    for r, s in enumerate(_run(rank_pools(2), matrix, alloc=alloc)):
        assert (s["memcpy_bytes"] > 0) == bool(alloc), s  # the arena's route, or process_vm_readv's
        assert s["nontemporal_bytes"] == matrix[r][r] * 4 + s["memcpy_bytes"], s


def test_smaller_outputs_keep_plain_stores(rank_pools):
    for alloc in ("", "both"):
        assert all(s["nontemporal_bytes"] == 0 for s in _run(rank_pools(2), uniform_direct_matrix(2, 4), alloc=alloc))


@pytest.mark.parametrize("numel,pipeline", [(256, False), (1 << 18, True)])
def test_reductions_pick_eager_or_the_pipeline(rank_pools, numel, pipeline):
    stats = rank_pools(2).run(fastpath_tasks.reduction_routes, numel, "routes-" + uuid.uuid4().hex[:8])
    for s in stats:
        assert s["right"], s
        assert (s["pipeline_calls"] == 1) == pipeline and (s["eager_bytes"] > 0) != pipeline, s


# --- the split planner alone (csrc/comm/shm/split_planner.h) -------------------------------------------------

needs_testing = pytest.mark.skipif(_testing is None, reason="atb_ops._testing not built (ATB_OPS_TESTING=0)")
MIB = 1 << 20


def _plan(n, direct, *, split=True, pull=None, push=None, eager=None, self_bytes=None):
    return _testing.plan_split(n, direct, eager or [0] * (n * n), self_bytes or [0] * n, pull or [0] * (n * n),
                               push or [0] * (n * n), split)


@needs_testing
def test_planner_lets_receivers_pull_when_nothing_is_uneven():
    # Two ranks exchange equal messages: equal loads, equal costs (ties go to the receiver).
    assert _plan(2, [0, 4 * MIB, 4 * MIB, 0]) == [0, 0, 0, 0]


@needs_testing
def test_planner_never_splits_small_messages():
    below = _testing.min_split_bytes() - 4096
    assert _plan(2, [0, 0, below, 0]) == [0, 0, 0, 0]


@needs_testing
def test_planner_moves_part_of_a_big_message_to_an_idle_sender():
    # Rank 1 sends rank 0 16 MiB and receives nothing: rank 1 pushes a page-aligned part, rank 0 pulls the rest.
    pushed = _plan(2, [0, 0, 16 * MIB, 0])
    tail = pushed[1 * 2 + 0]
    assert 0 < tail < 16 * MIB and tail % 4096 == 0, pushed
    # The loads even out to within a granule or so.
    assert abs((16 * MIB - tail) - tail) <= 2 * 4096, pushed
    assert _plan(2, [0, 0, 16 * MIB, 0], split=False) == [0, 0, 0, 0]


@needs_testing
def test_planner_starts_each_message_on_its_cheaper_side():
    # The receiver's output is in the arena (the sender can memcpy into it, cost 1); pulling would take
    # process_vm_readv (cost 2): without splitting, the sender pushes the whole message.
    push = [0, 0, 1, 0]
    assert _plan(2, [0, 0, 64 << 10, 0], split=False, push=push) == [0, 0, 64 << 10, 0]


@needs_testing
def test_planner_pushes_only_what_moves_directly():
    import random

    rng = random.Random(5)
    for n in (2, 3, 4):
        for _ in range(20):
            direct = [0 if i // n == i % n else rng.choice([0, 4096, 300 << 10, 5 * MIB]) for i in range(n * n)]
            pushed = _plan(n, direct)
            assert all(0 <= p <= d for p, d in zip(pushed, direct, strict=True)), (direct, pushed)


# --- AllGather's own shm body (one post per rank, every rank's bytes alike) -----------------------------------

def _allgather(pool, counts, alloc="", env=None, per_rank=None, dtype_name="float32", repeats=3):
    domain = "routes-ag-" + uuid.uuid4().hex[:8]
    if per_rank is not None:  # (alloc, env) of each rank
        stats = pool.run(fastpath_tasks.allgather_calls, dtype_name, counts, domain, repeats, per_rank=per_rank)
    else:
        stats = pool.run(fastpath_tasks.allgather_calls, dtype_name, counts, domain, repeats, alloc, env)
    assert [s["wrong"] for s in stats] == [0] * len(stats), stats
    return stats


@pytest.mark.parametrize("world_size", [2, 3, 4])
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "int8", "bool"])
def test_allgather_at_the_eager_edges(rank_pools, world_size, dtype_name):
    """Counts one element under, at and over the eager limit, zero, odd and large, 3 calls each (the two
    parities of the eager buffers and reused outputs): every element is its sender's of that call."""
    es = itemsize(dtype_name)
    counts = [EAGER // es - 1, EAGER // es, EAGER // es + 1, 0, 1, 3, (300 << 10) // es + 7]
    _allgather(rank_pools(world_size), counts, dtype_name=dtype_name)


def test_allgather_small_travels_eager_large_direct(rank_pools):
    n = EAGER // 4 + 1
    (small,) = {s["eager_bytes"] for s in _allgather(rank_pools(2), [16], repeats=1)}
    assert small == 16 * 4
    for s in _allgather(rank_pools(2), [n], repeats=1):
        assert s["eager_bytes"] == 0 and s["vm_bytes"] == n * 4 and s["memcpy_bytes"] == 0, s


@pytest.mark.parametrize("alloc", ["send", "both"])
def test_allgather_arena_inputs_move_by_memcpy(rank_pools, alloc):
    n = EAGER // 4 + 1
    for s in _allgather(rank_pools(2), [n], alloc=alloc, repeats=2):
        assert s["memcpy_bytes"] == 2 * n * 4 and s["vm_bytes"] == 0, s


def test_allgather_into_16_mib_writes_around_the_caches(rank_pools):
    n = STREAMING_OUTPUT // (2 * 4) + 3
    for s in _allgather(rank_pools(2), [n], repeats=2):
        assert s["nontemporal_bytes"] == 2 * n * 4 and s["vm_bytes"] == 2 * n * 4, s


# --- reused buffers onto huge pages (csrc/core/memory.h ReusedBufferPages) ------------------------------------

REUSED_NUMEL = 2 << 20  # 8 MiB of float32 per buffer: over the 4 MiB threshold, several whole 2 MiB pages


def _reused(pool, fresh: bool, env: dict[str, str] | None = None, calls: int = 3) -> list[dict]:
    stats = pool.run(fastpath_tasks.reused_buffer_pages, REUSED_NUMEL, calls, fresh,
                     "pages-" + uuid.uuid4().hex[:8], env)
    assert [s["wrong"] for s in stats] == [0] * len(stats), stats
    return stats


def test_reused_buffers_are_collapsed_onto_huge_pages(rank_pools):
    """The same send and output tensors on every call: the first call leaves their pages alone, later ones collapse
    their whole huge pages (counted by the communicator, seen in /proc/self/smaps). What the kernel grants is its
    own: a buffer it refuses for a passing reason (a busy page, no free huge page) is tried again on its next uses,
    three tries in all, and khugepaged may collapse a buffer itself after the advice. So the counter, which holds
    what this communicator's own MADV_COLLAPSE calls collapsed, is 0 after the first call, has grown by the fourth,
    never counts a page twice (at most the buffers' whole pages, in whole pages) and never claims a page smaps does
    not show huge. (CI saw a 6 MiB buffer left on small pages, and another on huge pages in smaps though no call of
    ours had collapsed it.)"""
    stats = _reused(rank_pools(2), fresh=False, calls=4)
    if not all(s["collapse_works"] for s in stats):
        pytest.skip("this kernel does not collapse anonymous memory onto huge pages (MADV_COLLAPSE, Linux 6.1+)")
    for s in stats:
        counted = s["counted"]
        assert s["whole"] > 0, s
        assert counted[0] == 0 and counted[-1] > 0, s
        assert counted == sorted(counted) and counted[-1] <= s["whole"], s
        assert counted[-1] % s["huge"] == 0, s
        assert s["smaps_kib"] * 1024 >= counted[-1], s


def test_buffers_seen_once_keep_their_pages(rank_pools):
    """New tensors every call (none at an address seen before): nothing is collapsed."""
    for s in _reused(rank_pools(2), fresh=True):
        assert s["counted"] == [0, 0, 0], s


def test_hugepages_off_collapses_nothing(rank_pools):
    for s in _reused(rank_pools(2), fresh=False, env={"ATB_OPS_HUGEPAGES": "0"}):
        assert s["counted"] == [0, 0, 0], s
