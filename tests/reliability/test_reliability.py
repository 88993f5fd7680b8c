"""Faults: a rank killed mid-collective, count mismatches, crashed runs, file permissions, stale names.

Every survivor must raise ERROR_COMM_PEER_DIED naming the dead peer within seconds (far under ATB_OPS_TIMEOUT,
so a survivor that merely timed out fails the test), and exit normally; no test may hang.
"""

from __future__ import annotations

import os
import queue
import signal
import stat
import time
import uuid
from pathlib import Path

import pytest

from atb_ops import doctor
from tests.reliability import fault_tasks
from tests.support.launch import Spawned, free_port, spawn
from tests.support.rendezvous import record_name

KILL_TIMEOUT_S = 60
# Death is noticed by the waits' liveness checks (every 100 ms) or a closed socket: well under the timeout.
DEATH_NOTICED_S = 5


def _events_until(events, kind: str, count: int, timeout: float) -> list[tuple]:
    got, deadline = [], time.time() + timeout
    while len(got) < count:
        try:
            item = events.get(timeout=max(deadline - time.time(), 0.01))
        except queue.Empty:
            raise AssertionError(f"only {len(got)} of {count} '{kind}' events within {timeout} s: {got}") from None
        if item[0] == kind or kind == "any":
            got.append(item)
        elif item[0] == "error":
            raise AssertionError(f"rank {item[1]} failed early: {item[3]}")
    return got


def _start(world_size: int, backend: str, env: dict) -> Spawned:
    """Ranks looping on a collective (fault_tasks.loop_rank), reporting on the returned queue."""
    return spawn(fault_tasks.loop_rank, [(r, world_size, backend, env) for r in range(world_size)])


@pytest.mark.parametrize("backend,op", [("shm", "alltoallv"), ("shm", "alltoallv_large"), ("gloo", "alltoallv"),
                                        ("shm", "allreduce"), ("shm", "allgather")])
@pytest.mark.parametrize("world_size,victim", [(2, 1), (3, 0), (3, 2)])
def test_killed_rank_is_named_by_survivors(backend, op, world_size, victim):
    env = {"ATB_OPS_TIMEOUT": str(KILL_TIMEOUT_S), "ATB_OPS_JOB_ID": uuid.uuid4().hex, "MASTER_PORT": str(free_port()),
           "OP": op}
    ranks = _start(world_size, backend, env)
    try:
        _events_until(ranks.reports, "ready", world_size, 120)
        time.sleep(0.3)
        os.kill(ranks.procs[victim].pid, signal.SIGKILL)
        killed_at = time.time()
        errors = _events_until(ranks.reports, "error", world_size - 1, DEATH_NOTICED_S + 20)
        for p in ranks.procs:
            p.join(timeout=30)
    finally:
        ranks.stop()
    for _, rank, when, message in errors:
        after = when - killed_at
        print(f"[{backend} {op} n={world_size}] rank {rank} raised {after:.2f} s after rank {victim} was killed")
        assert rank != victim
        assert message.startswith("ERROR_COMM_PEER_DIED"), message
        assert after <= DEATH_NOTICED_S, (rank, after, message)
        assert f"rank {victim} (pid {ranks.procs[victim].pid})" in message, message
    # The victim died of the signal; every survivor reported and then exited normally.
    assert ranks.procs[victim].exitcode == -signal.SIGKILL
    assert [p.exitcode for r, p in enumerate(ranks.procs) if r != victim] == [0] * (world_size - 1)


@pytest.mark.parametrize("backend", ["shm", "gloo"])
def test_count_mismatch_raises_same_error_everywhere(rank_pools, backend):
    """Every backend checks the count matrix before moving data (gloo by an all-gather of every rank's counts):
    both ranks raise the same error, write nothing outside their output, and the next call works."""
    results = rank_pools(2).run(fault_tasks.mismatch, backend, "20")
    messages = [error for error, _, _ in results]
    for error, intact, recovered in results:
        assert "count mismatch: rank 0 sends 3 elements to rank 1, but rank 1 expects 2 from rank 0" in error, error
        assert error.startswith("ERROR_INVALID_PARAM")
        assert intact and recovered
    assert messages[0] == messages[1]


def _shm_files() -> set[Path]:
    """Every name in atb_ops' private folder (segments, rendezvous records, temporaries)."""
    folder = doctor.private_folder()
    return set(folder.iterdir()) if folder.is_dir() else set()


def _lonely(target, env) -> Spawned:
    """One process of a rank whose peers never come (fault_tasks.lonely_root, lonely_peer)."""
    return spawn(target, [(env,)])


def test_rendezvous_files_are_private_and_unguessable():
    env = {"ATB_OPS_TIMEOUT": "60", "ATB_OPS_JOB_ID": uuid.uuid4().hex}
    before = _shm_files()
    ranks = _lonely(fault_tasks.lonely_root, env)
    try:
        _events_until(ranks.reports, "waiting", 1, 60)
        deadline = time.time() + 10
        while len(_shm_files() - before) < 3 and time.time() < deadline:
            time.sleep(0.05)
        new = _shm_files() - before
        # The segment, the root's record and its rank claim (job_census.h).
        assert sorted(p.name.split(".")[0] for p in new) == ["clm", "rdv", "seg"], new
        folder = doctor.private_folder()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.getuid()
        for path in new:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, (path, oct(path.stat().st_mode))
        segment = next(p for p in new if p.name.startswith("seg."))
        token = segment.name[len("seg.") :]
        assert len(token) == 32 and int(token, 16) >= 0  # 128 random bits
        # A live run's files are never leftovers, even while it waits.
        assert not {item.path for item in doctor.find_leftovers()} & new
    finally:
        ranks.stop()


def test_crashed_rendezvous_leaves_nothing_that_breaks_the_next_run():
    job, domain = uuid.uuid4().hex, "crash-test"
    env = {"ATB_OPS_TIMEOUT": "60", "ATB_OPS_JOB_ID": job, "DOMAIN": domain, "MASTER_PORT": str(free_port())}
    before = _shm_files()
    ranks = _lonely(fault_tasks.lonely_root, env)
    _events_until(ranks.reports, "waiting", 1, 60)
    deadline = time.time() + 10

    def published() -> bool:  # its segment, and its record under its final name (not the temporary)
        names = [p.name for p in _shm_files() - before]
        return any(n.startswith("seg.") for n in names) and any(n.startswith("rdv.") for n in names)

    while not published() and time.time() < deadline:
        time.sleep(0.05)
    ranks.stop()  # killed inside the rendezvous: its names stay behind
    stale = _shm_files() - before
    assert sorted(p.name.split(".")[0] for p in stale) == ["clm", "rdv", "seg"], stale
    assert stale <= {item.path for item in doctor.find_leftovers()}

    # Same job, same commDomain: works without any manual cleanup.
    ranks = _start(2, "shm", {**env, "STOP_AFTER": "3"})
    try:
        done = _events_until(ranks.reports, "done", 2, 120)
    finally:
        ranks.stop()
    assert all(ok == "True" for *_, ok in done)
    # The next creation found the killed one's files stale and removed them: no doctor --clean needed.
    assert not (stale & _shm_files())


def test_run_killed_after_rendezvous_leaves_no_files():
    env = {"ATB_OPS_TIMEOUT": "30", "ATB_OPS_JOB_ID": uuid.uuid4().hex, "DOMAIN": "killed-run"}
    before = _shm_files()
    ranks = _start(2, "shm", env)
    try:
        _events_until(ranks.reports, "ready", 2, 120)
    finally:
        ranks.stop()
    assert not (_shm_files() - before)
    ranks = _start(2, "shm", {**env, "STOP_AFTER": "2"})
    try:
        assert all(ok == "True" for *_, ok in _events_until(ranks.reports, "done", 2, 120))
    finally:
        ranks.stop()


def test_stale_or_foreign_rendezvous_is_refused():
    """Something else at a rendezvous name (here: bytes that are no atb_ops record) fails the waiting rank at
    once with an error naming the path, instead of being joined or waited out."""
    job, domain = uuid.uuid4().hex, "stale-name"
    key = f"shm|job:{job}|{domain}"  # purpose | job | commDomain
    folder = doctor.private_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    rdv = folder / record_name(key)
    rdv.write_bytes(b"not a rendezvous record, but 48 bytes or more of something else")
    os.chmod(rdv, 0o600)
    try:
        started = time.time()
        ranks = _lonely(
            fault_tasks.lonely_peer, {"ATB_OPS_TIMEOUT": "60", "ATB_OPS_JOB_ID": job, "DOMAIN": domain}
        )
        ((_, _, when, message),) = _events_until(ranks.reports, "any", 1, 60)
        ranks.procs[0].join(timeout=10)
        assert message.startswith("ERROR_RT_FAIL") and str(rdv) in message, message
        assert "not an atb_ops rendezvous record" in message, message
        assert when - started < 30  # at once, not after ATB_OPS_TIMEOUT (spawn and import take seconds)
    finally:
        rdv.unlink(missing_ok=True)
