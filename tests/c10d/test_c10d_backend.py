"""The torch.distributed backend "atb_ops" on CPU ranks: every collective against plain-torch goldens on 2 and 4
ranks, async Works, cross-rank mismatches, object collectives, DDP and FSDP2 against gloo, and
init_process_group("atb_ops") as the default group in fresh processes."""

from __future__ import annotations

import pytest
import torch

from tests.c10d import c10d_tasks
from tests.support.environment import clean_env
from tests.support.launch import finish, free_port, start

SIZES = [2, 4]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(
    "task, cases",
    [
        (c10d_tasks.all_reduce, lambda n: 3 * 4 + 2 + 1),  # 3 dtypes x 4 ops, AVG on 2 floating dtypes, strided
        (c10d_tasks.gathers, lambda n: 3),
        (c10d_tasks.reduce_scatters, lambda n: 3 * 2 + 2),
        (c10d_tasks.broadcasts, lambda n: 3 * n),
        (c10d_tasks.alltoalls, lambda n: 3),
        (c10d_tasks.point_to_point, lambda n: 3),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_collectives_match_torch_goldens(rank_pools, n, task, cases):
    # Each rank asserts its results against its own plain-torch golden; here: every rank ran every case.
    assert rank_pools(n).run(task) == [cases(n)] * n


@pytest.mark.parametrize("n", SIZES)
def test_runs_on_atb_ops_shm(rank_pools, n):
    for got in rank_pools(n).run(c10d_tasks.shm_route):
        assert (got["type"], got["comm_backend"], got["counted"]) == ("C10dBackend", "shm", 1), got


def test_send_recv_tags_must_come_in_the_same_order(rank_pools):
    """torch.distributed's tags: in the same order on both ranks they move the data; out of order, both ranks raise
    naming the two tags (this backend meets sends and receives in call order, as NCCL does; it handed the first send
    to the receive of the second tag, no error)."""
    sender, receiver = rank_pools(2).run(c10d_tasks.tagged_point_to_point)
    assert len(sender) == len(receiver) == 2, (sender, receiver)
    assert "rank 0 sent tag 1 to rank 1, whose receive takes tag 2" in sender[0], sender
    assert "rank 1 takes tag 2 from rank 0, which sent tag 1" in receiver[0], receiver
    assert "rank 1 takes tag 1 from rank 0, which sent tag 2" in receiver[1], receiver
    assert all("meet in call order" in e for e in sender + receiver), (sender, receiver)


def test_async_op_work_and_future(rank_pools):
    assert rank_pools(2).run(c10d_tasks.async_ops) == [[True, True, True]] * 2


@pytest.mark.parametrize("n", SIZES)
def test_mismatch_raises_on_every_rank(rank_pools, n):
    results = rank_pools(n).run(c10d_tasks.mismatch)
    for rank, errors in enumerate(results):
        assert len(errors) == 7, (rank, errors)
        size_error, dtype_error, arg_error, avg_error, band_error, *avg_vs_sum = errors
        for error in avg_vs_sum:  # one rank averaging beside ranks summing: the call itself differs, on every rank
            assert "operation differs" in error and "AVG torch.distributed." in error, (rank, error)
        assert "ReduceOp.AVG needs a floating-point tensor" in avg_error, avg_error
        assert "BAND/BOR/BXOR" in band_error, band_error
        assert "ERROR_INVALID_TENSOR_SIZE" in size_error and "rank 0" in size_error, size_error
        assert "ERROR_INVALID_TENSOR_DTYPE" in dtype_error, dtype_error
        assert "in_split_sizes" in arg_error and str(n + 1) in arg_error, arg_error


def test_object_collectives(rank_pools):
    for objs, gathered in rank_pools(2).run(c10d_tasks.objects):
        assert objs == [{"rank": 1, "text": "xx"}, (1, [1, 2])]
        assert gathered == [{"r": 0, "sq": 0}, {"r": 1, "sq": 1}]


def _assert_same_training(ours, theirs, exact: bool):
    for (losses, params, ran), (ref_losses, ref_params, _) in zip(ours, theirs, strict=True):
        assert ran > 0, "no collective ran on atb_ops"
        assert losses[-1] < losses[0], losses  # it trained
        if exact:
            assert losses == ref_losses
            for p, q in zip(params, ref_params, strict=True):
                assert torch.equal(p, q)
        else:
            torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), rtol=1e-6, atol=1e-7)
            for p, q in zip(params, ref_params, strict=True):
                torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)


def test_ddp_matches_gloo_bitwise(rank_pools):
    # 2 ranks: a sum of two gradients is the same float in either order, so the runs agree bit for bit.
    pool = rank_pools(2)
    ours, gloo = pool.run(c10d_tasks.ddp_train, "atb_ops"), pool.run(c10d_tasks.ddp_train, "gloo")
    _assert_same_training(ours, gloo, exact=True)


def test_fsdp2_matches_gloo(rank_pools):
    pool = rank_pools(2)
    ours, gloo = pool.run(c10d_tasks.fsdp_train, "atb_ops"), pool.run(c10d_tasks.fsdp_train, "gloo")
    _assert_same_training(ours, gloo, exact=True)


DEFAULT_GROUP = """
import sys, datetime, torch, torch.distributed as dist
import atb_ops
rank, n, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else ""
dist.init_process_group("atb_ops", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n,
                        timeout=datetime.timedelta(seconds={"stall": 2, "stall-env": 60}.get(mode, 20)))
assert dist.get_backend() == "atb_ops", dist.get_backend()
x = torch.full((4,), float(rank + 1))
dist.all_reduce(x)
assert torch.equal(x, torch.full((4,), float(n * (n + 1) // 2))), x
out = torch.empty(2 * n)
dist.all_to_all_single(out, torch.arange(2.0 * n) + 100 * rank)
want = torch.cat([torch.arange(2.0 * n)[2 * rank:2 * rank + 2] + 100 * s for s in range(n)])
assert torch.equal(out, want), out
objs = [None]
if rank == 0:
    objs = [{"hello": n}]
dist.broadcast_object_list(objs, src=0)
assert objs == [{"hello": n}], objs
dist.barrier()
if not mode:
    # Every collective of the pool tests, now on the default group (backend "atb_ops" itself).
    from tests.c10d import c10d_tasks
    c10d_tasks._groups[n] = dist.group.WORLD
    for task in (c10d_tasks.all_reduce, c10d_tasks.gathers, c10d_tasks.reduce_scatters, c10d_tasks.broadcasts,
                 c10d_tasks.alltoalls, c10d_tasks.point_to_point, c10d_tasks.async_ops, c10d_tasks.objects):
        task(rank, n)
if mode and rank == 1:
    if mode.startswith("stall"):
        import time
        time.sleep(8)  # alive but absent: rank 0 must give up after 2 s (the group's timeout or ATB_OPS_TIMEOUT)
    sys.exit(0)  # leaves: rank 0's next collective must fail naming it, not hang
if mode:
    try:
        dist.all_reduce(torch.ones(8))
    except dist.DistBackendError as e:
        print("DistBackendError:", str(e).replace(chr(10), " ")[:400])
        sys.exit(0)
    sys.exit("no error")
dist.destroy_process_group()
print("ok")
"""


@pytest.mark.parametrize("n", [2, 3])
def test_default_group_atb_ops(n):
    # init_process_group("atb_ops"): the default group runs every collective (checked against goldens inside).
    port = str(free_port())
    procs = [start(DEFAULT_GROUP, [str(r), str(n), port], clean_env()) for r in range(n)]
    for r, e in enumerate(finish(procs, 120)):
        assert e.returncode == 0 and e.last_line() == "ok", (r, e.stdout, e.stderr)


def test_peer_exit_is_dist_backend_error():
    port = str(free_port())
    procs = [start(DEFAULT_GROUP, [str(r), "2", port, "die"], clean_env(ATB_OPS_TIMEOUT="20")) for r in range(2)]
    exits = finish(procs, 120)
    assert exits[1].returncode == 0, exits[1].stderr
    assert exits[0].returncode == 0, (exits[0].stdout, exits[0].stderr)
    line = exits[0].last_line()
    assert line.startswith("DistBackendError:") and "ERROR_COMM_PEER_DIED" in line and "rank 1" in line, line


@pytest.mark.parametrize(
    ("mode", "atb_ops_timeout", "named"),
    [("stall", "60", "the group's timeout of 2 s"), ("stall-env", "2", "ATB_OPS_TIMEOUT=2 s")],
    ids=["group-timeout", "shorter-ATB_OPS_TIMEOUT"],
)
def test_group_timeout_is_dist_backend_error(mode, atb_ops_timeout, named):
    # The shorter of init_process_group(timeout=...) and a set ATB_OPS_TIMEOUT bounds the wait for a peer that is
    # alive but never calls (2 s either way), and the message names the one that ran out.
    port = str(free_port())
    env = clean_env(ATB_OPS_TIMEOUT=atb_ops_timeout)
    procs = [start(DEFAULT_GROUP, [str(r), "2", port, mode], env) for r in range(2)]
    exits = finish(procs[:1], 120)
    procs[1].kill()  # still asleep (8 s): only rank 0's side of the story matters
    finish(procs[1:], 10)
    assert exits[0].returncode == 0, (exits[0].stdout, exits[0].stderr)
    line = exits[0].last_line()
    assert line.startswith("DistBackendError:") and "ERROR_COMM_TIMEOUT" in line and "rank 1" in line, line
    assert named in line, line
    assert exits[0].seconds < 30, exits[0].seconds  # 2 s (and start-up on a busy machine), not the 60 s


