"""Backend "gloo": every call's cross-check is one exchange among the ranks, and a small call's data rides in it
(all-to-all, all-gather, all-reduce and broadcast of up to 16 KiB / (ranks - 1) per peer, more for a call whose two
predecessors needed as much, or which came where calls that needed as much came in a loop's two rounds before: one
round between the ranks instead of two). The counters (atb_ops._C.communicator_stats' eager_bytes) show which calls
took that route; every output is checked against a golden computed from every rank's seeded data, outputs start as
a sentinel."""

from __future__ import annotations

import uuid

import pytest

from tests.atb import gloo_check_tasks

# Bytes of data per peer that fit in the check: 16 KiB over the peers, in 8-byte words.
ROOM = {2: 16384, 3: 8192}


def _domain() -> str:
    return "gloo-check-" + uuid.uuid4().hex[:8]


@pytest.mark.parametrize("world_size", [2, 3])
def test_small_alltoallv_is_done_in_the_check(rank_pools, world_size):
    matrix = [[(3 * i + j) % 5 + 1 for j in range(world_size)] for i in range(world_size)]
    got = rank_pools(world_size).run(gloo_check_tasks.alltoallv, matrix, _domain())
    for rank, r in enumerate(got):
        assert r["wrong"] == 0, got
        # float32: what this rank received from the others, all of it inside the check
        assert r["eager_bytes"] == 4 * sum(matrix[src][rank] for src in range(world_size) if src != rank), got


def test_one_large_message_sends_the_whole_call_after_the_check(rank_pools):
    """Every rank decides alike: one message over the room (rank 1 -> rank 0) and the whole call moves after the
    check, the small messages too."""
    over = ROOM[2] // 4 + 1
    got = rank_pools(2).run(gloo_check_tasks.alltoallv, [[2, 3], [over, 1]], _domain())
    assert all(r["wrong"] == 0 and r["eager_bytes"] == 0 for r in got), got


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
@pytest.mark.parametrize("world_size", [2, 3])
def test_small_collectives_are_done_in_the_check(rank_pools, world_size, dtype):
    numel = 100
    got = rank_pools(world_size).run(gloo_check_tasks.collectives, numel, dtype, _domain())
    size = {"float32": 4, "bfloat16": 2, "int32": 4}[dtype] * numel
    for rank, r in enumerate(got):
        # in rank order, as shm: bit-equal to the golden
        assert r["allreduce"] and r["allgather"] and r["broadcast"] and r["input_untouched"], got
        peers = world_size - 1
        assert r["allreduce_eager"] == peers * size, got
        assert r["allgather_eager"] == 2 * peers * size, got
        assert r["broadcast_eager"] == 2 * peers * size + (0 if rank == 1 % world_size else size), got


@pytest.mark.parametrize("world_size", [2, 3])
def test_large_collectives_move_after_the_check(rank_pools, world_size):
    """One float32 over the room: the all-reduce and the all-gather move after the check; the broadcast, whose two
    predecessors needed as much room, rides in a check that learned it (LearnedRoom)."""
    numel = ROOM[world_size] // 4 + 1  # one float32 over the room
    got = rank_pools(world_size).run(gloo_check_tasks.collectives, numel, "float32", _domain())
    for rank, r in enumerate(got):
        # gloo's ring adds in its own order (bit-equal in rank order only with 2 ranks)
        assert r["allreduce_err"] < 1e-6 and r["allgather"] and r["broadcast"] and r["input_untouched"], got
        assert r["allreduce_eager"] == r["allgather_eager"] == 0, got
        assert r["broadcast_eager"] == (0 if rank == 1 % world_size else 4 * numel), got


@pytest.mark.parametrize("world_size", [2, 3])
def test_a_large_call_in_a_loop_of_two_rides_once_the_loop_repeated(rank_pools, world_size):
    """A loop alternating a large all-gather (one float32 over the usual room) and a small all-reduce: the check
    before each all-gather learns, from the calls that followed the all-reduce in the two rounds before, that the
    next one needs that much room, and the all-gather rides in it from the fourth round on; the all-reduce, whose
    followers were small, keeps the usual room and rides every time. Every output is the golden."""
    numel = ROOM[world_size] // 4 + 1
    rounds = 6
    got = rank_pools(world_size).run(gloo_check_tasks.cycle, numel, rounds, _domain())
    peers = world_size - 1
    for r in got:
        assert all(r["right"]), got
        assert r["gather_eager"] == [0, 0, 0] + [peers * 4 * numel] * (rounds - 3), got
        assert r["reduce_eager"] == [peers * 4 * 10] * rounds, got


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("world_size", [2, 3])
def test_allreduce_of_up_to_512_kib_to_the_peers_is_one_exchange_in_rank_order(rank_pools, world_size, dtype):
    """Ranks on one host: an all-reduce over the check's room whose input, once to each peer, is at most 512 KiB is
    one exchange of every rank's input and a sum in rank order (bit-equal to the rank-order golden, also with 3
    ranks, where gloo's ring adds in another order); one element more takes gloo's ring."""
    itemsize = {"float32": 4, "bfloat16": 2}[dtype]
    numel = (512 << 10) // (world_size - 1) // itemsize
    got = rank_pools(world_size).run(gloo_check_tasks.collectives, numel, dtype, _domain())
    for r in got:
        assert r["allreduce"] and r["allgather"] and r["broadcast"] and r["input_untouched"], got
        assert r["allreduce_eager"] == 0, got  # not inside the check: after it
    got = rank_pools(world_size).run(gloo_check_tasks.collectives, numel + 1, dtype, _domain())
    for r in got:
        assert r["allreduce_err"] < (1e-6 if dtype == "float32" else 1e-2), got
