"""Misuse a careless or hostile user could try: each gives the right answer or a clear error, never a crash,
a hang or wrong data (issue: hardening under misuse)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from atb_ops import doctor
from tests.reliability import hardening_tasks
from tests.support.launch import run_ranks
from tests.support.paths import REPO_ROOT
from tests.support.rendezvous import record_name


def _python(code: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter (a crash there cannot take pytest down)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=REPO_ROOT)


def test_fork_child_cannot_use_the_parents_communicator(rank_pools):
    reports = rank_pools(2).run(hardening_tasks.fork_child_is_refused)
    child = reports[0]
    assert child["child_exit"] == 0, child
    assert child["inherited"].startswith("ERROR_COMM_EMPTY") and "after fork()" in child["inherited"], child
    assert child["own"] == [[0.0, 1.0, 2.0, 3.0]], child  # a communicator made in the child works


def test_two_threads_share_one_communicator_without_torn_data(rank_pools):
    wrong = rank_pools(2).run(hardening_tasks.threads_share_one_communicator, 200)
    assert wrong == [0, 0]


def test_two_threads_sharing_one_operation_never_swap_layouts(rank_pools):
    """One operation, two threads, two layouts at once: each call runs the plan made from its own inputs
    (issue 29: no layout kept in the operation between inferShape and run)."""
    for report in rank_pools(2).run(hardening_tasks.threads_share_one_operation, 60):
        assert report["wrong"] == 0 and report["other"] == [], report
        assert report["right"] + report["errors"] == 120, report
        assert report["right"] > 0, report


@pytest.mark.parametrize("count", [100, 300_000])
def test_output_over_its_own_input_is_computed_through_a_temporary(rank_pools, count):
    assert rank_pools(2).run(hardening_tasks.aliased_output, count) == [0, 0]


@pytest.mark.parametrize("count", [100, 300_000])
def test_distributed_output_over_its_own_input_is_staged(rank_pools, count):
    assert rank_pools(2).run(hardening_tasks.distributed_output_over_input, count) == [0, 0]


def test_gloo_comm_domains_never_meet(rank_pools):
    assert rank_pools(2).run(hardening_tasks.gloo_domains_stay_apart) == [0, 0]


@pytest.mark.parametrize("backend", ["shm", "gloo"])
def test_failed_communicator_leaves_the_cache(rank_pools, backend):
    job = uuid.uuid4().hex[:8]
    reports = rank_pools(2).run(hardening_tasks.failed_communicator_is_replaced, job, backend)
    first, again = reports[0]["first"], reports[0]["again"]
    assert first.startswith("ERROR_COMM_TIMEOUT"), first
    assert again.startswith("ERROR_COMM_TIMEOUT") and "failed earlier" in again, again  # the same error, repeated
    assert reports[1]["late"].startswith("ERROR_COMM_PEER_DIED") and "gave up" in reports[1]["late"], reports[1]
    assert all(r["fresh_ok"] for r in reports), reports


def test_deeply_nested_json_is_an_error_not_a_crash():
    proc = _python("""
        import json, torch, atb_ops
        deep = '{"rank":' + '[' * 100000 + ']' * 100000 + '}'
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        for call in (op.set_param, op.set_varaintpack_param):
            try:
                call(deep)
                print("accepted")
            except RuntimeError as e:
                print(str(e)[:200])
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("ERROR_INVALID_PARAM") and "deeper than" in line for line in lines)


@pytest.mark.parametrize(
    ("value", "outcome"),
    [("inf", "must be a finite number"), ("nan", "must be a finite number"), ("-1", "must be a finite number"),
     ("1e-9", "shorter than the 1 ms"), ("1e10", "clamped"), ("0.5", "ok")],
)
def test_timeout_values_are_validated_once(value, outcome):
    from atb_ops import _testing

    if outcome == "ok":
        assert _testing.parse_seconds("ATB_OPS_TIMEOUT", value) == 500
    elif outcome == "clamped":
        # The warning is torch's (TORCH_WARN_ONCE, on stderr): checked in a fresh interpreter, where it is first.
        proc = _python(f"""
            from atb_ops import _testing
            print(_testing.parse_seconds("ATB_OPS_TIMEOUT", "{value}"))
        """)
        assert proc.stdout.strip() == str(24 * 3600 * 1000), proc.stdout + proc.stderr
        assert f"ATB_OPS_TIMEOUT={value} s is more than 24 h; using 86400 s" in proc.stderr, proc.stderr
    else:
        with pytest.raises(RuntimeError, match=f"^ERROR_INVALID_PARAM: ATB_OPS_TIMEOUT.*{outcome}") as info:
            _testing.parse_seconds("ATB_OPS_TIMEOUT", value)
        assert value in str(info.value)  # the value as the user wrote it


def test_rank_lists_in_messages_are_short():
    from atb_ops import _testing

    assert _testing.format_ranks([1, 3]) == "1, 3"
    assert _testing.format_ranks(list(range(1, 10000))) == "1-9999 (9999 ranks)"


def test_huge_shm_rank_size_is_refused_before_allocating():
    proc = _python("""
        import json, resource, time, torch, atb_ops
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        op.set_param(json.dumps({"rank": 0, "rankSize": 100000, "backend": "shm"}))
        start = time.time()
        try:
            op.execute([torch.zeros(1), torch.empty(0)])
        except RuntimeError as e:
            print(str(e)[:300])
        print(time.time() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """, env={"ATB_OPS_TIMEOUT": "60"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    message, figures = proc.stdout.strip().splitlines()[-2:]
    seconds, max_rss_kib = (float(v) for v in figures.split())
    assert "ERROR_INVALID" in message, message
    assert seconds < 10 and max_rss_kib < 1_500_000, (seconds, max_rss_kib)


def test_counts_beyond_int64_are_reported_as_written():
    proc = _python("""
        import json, torch, atb_ops
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        try:
            op.set_varaintpack_param('{"sendCounts": [18446744073709551615], "sdispls": [0], "recvCounts": [0], '
                                     '"rdispls": [0]}')
        except RuntimeError as e:
            print(e)
    """)
    assert "18446744073709551615" in proc.stdout and "does not fit int64" in proc.stdout, proc.stdout + proc.stderr


def test_distributed_count_of_2_63_is_a_clear_error(rank_pools):
    messages = rank_pools(2).run(hardening_tasks.distributed_huge_count)
    for m in messages:
        assert m.startswith("AtbError:") and "9223372036854775808" in m, m


# ------------------------------------------------------------------------------ the private folder, doctor


def _key_path(job: str, domain: str) -> Path:
    """The rendezvous name of the shm bootstrap of a commDomain (as the code names it)."""
    return doctor.private_folder() / record_name(f"shm|job:{job}|{domain}")


@pytest.mark.parametrize("kind", ["directory", "foreign file", "dangling symlink", "fifo"])
def test_something_at_the_rendezvous_name_fails_both_ranks_fast(kind):
    job, domain = uuid.uuid4().hex, "occupied"
    folder = doctor.private_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    path = _key_path(job, domain)
    if kind == "directory":
        path.mkdir()
    elif kind == "foreign file":
        path.write_bytes(b"x" * 64)
        path.chmod(0o600)
    elif kind == "dangling symlink":
        path.symlink_to(folder / "nothing-here")
    else:
        os.mkfifo(path, 0o600)
    before = set(folder.iterdir())
    try:
        code = """
            import json, os, sys, time, torch, atb_ops
            rank = int(sys.argv[1])
            op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
            op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm", "commDomain": "occupied"}))
            start = time.time()
            try:
                op.execute([torch.zeros(2), *[torch.tensor([1, 1]), torch.tensor([0, 1])] * 2,
                            torch.empty(2)])
                print("no error")
            except RuntimeError as e:
                print(f"{time.time() - start:.1f}", str(e)[:400])
        """
        env = {**os.environ, "ATB_OPS_JOB_ID": job, "ATB_OPS_TIMEOUT": "60"}
        for rank in run_ranks(code, 2, env, timeout_s=120):
            assert rank.returncode == 0, rank.stderr[-2000:]
            seconds, message = rank.stdout.strip().split(" ", 1)
            assert message.startswith("ERROR_RT_FAIL") and str(path) in message, message
            assert float(seconds) < 10, rank.stdout  # at once, not after ATB_OPS_TIMEOUT
        # The root unlinked what it made; nothing new is left in the folder.
        assert set(folder.iterdir()) == before
    finally:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink(missing_ok=True)


def test_stale_record_of_a_dead_root_is_replaced():
    """A record left by a crashed run at this job's name does not stop the next run."""
    job = uuid.uuid4().hex
    path = _key_path(job, "after-crash")
    path.parent.mkdir(mode=0o700, exist_ok=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    header = (0x32762D7664722D61).to_bytes(8, "little") + bytes(16) + int(dead.stdout).to_bytes(4, "little")
    path.write_bytes(header + bytes(64))
    path.chmod(0o600)
    code = """
        import json, sys, torch, atb_ops
        rank = int(sys.argv[1])
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm", "commDomain": "after-crash"}))
        print(op.execute([torch.full((2,), float(rank)), *[torch.tensor([1, 1]), torch.tensor([0, 1])] * 2,
                          torch.empty(2)])[0].tolist())
    """
    env = {**os.environ, "ATB_OPS_JOB_ID": job, "ATB_OPS_TIMEOUT": "30"}
    try:
        for rank in run_ranks(code, 2, env, timeout_s=90):
            assert rank.returncode == 0 and rank.stdout.strip() == "[[0.0, 1.0]]", rank.stdout + rank.stderr[-2000:]
    finally:
        path.unlink(missing_ok=True)


def test_doctor_survives_odd_files_and_removes_only_its_own():
    folder = doctor.private_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    odd = {
        "dir": folder / f"rdv.{tag}dir",
        "link": folder / f"seg.{tag}link",
        "fifo": folder / f"tmp.{tag}fifo",
        "garbage": folder / f"rdv.{tag}garbage",
        "short": folder / f"seg.{tag}short",
        "other": folder / f"notes.{tag}",
    }
    odd["dir"].mkdir()
    odd["link"].symlink_to("/nonexistent")
    os.mkfifo(odd["fifo"], 0o600)
    odd["garbage"].write_bytes(b"pid=abc " * 10)
    odd["short"].write_bytes(b"\x00")
    odd["other"].write_text("mine")
    old = time.time() - 3600
    os.utime(odd["fifo"], (old, old), follow_symlinks=False)
    try:
        proc = _python("import sys; from atb_ops import doctor; sys.exit(doctor.main(['--clean']))", timeout=60)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for name, path in odd.items():
            assert str(path) in proc.stdout, (name, proc.stdout)
            assert path.is_symlink() or path.exists(), f"doctor removed {name}"
        assert "removed" not in "".join(line for line in proc.stdout.splitlines() if tag in line)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        odd["dir"].rmdir()
        for key in ("link", "fifo", "garbage", "short", "other"):
            odd[key].unlink(missing_ok=True)


def test_options_reach_python_through_the_native_parser(monkeypatch):
    from atb_ops import _C

    monkeypatch.setenv("ATB_OPS_CPU_PATH", "sideways")
    with pytest.raises(RuntimeError, match="ATB_OPS_CPU_PATH must be one of auto, shm, group, got 'sideways'"):
        _C.options()
    monkeypatch.setenv("ATB_OPS_CPU_PATH", "group")
    assert _C.options()["ATB_OPS_CPU_PATH"] == "group"
    assert json.dumps(_C.options())  # every value is text


@pytest.mark.parametrize("value", ["0", "5", "two"])
def test_gloo_streams_out_of_range_is_named(monkeypatch, value):
    from atb_ops import _C

    monkeypatch.setenv("ATB_OPS_GLOO_STREAMS", value)
    with pytest.raises(RuntimeError, match=f"ATB_OPS_GLOO_STREAMS must be an integer from 1 to 4, got '{value}'"):
        _C.options()
    monkeypatch.setenv("ATB_OPS_GLOO_STREAMS", "3")
    assert _C.options()["ATB_OPS_GLOO_STREAMS"] == "3"


def _exit_with(rank: int, world_size: int, code: int) -> None:
    if rank == world_size - 1:
        os._exit(code)


def test_a_rank_pool_worker_that_dies_is_reported_with_its_exit_status():
    """The pool itself: a worker that exits (a crash, an abort) fails the case at once, naming its exit status,
    instead of looking like a slow rank."""
    from tests.support.rankpool import RankFailure, RankPool

    pool = RankPool(2, timeout_s=60)
    try:
        started = time.monotonic()
        with pytest.raises(RankFailure, match=r"exit status by rank: \{1: 7\}"):
            pool.run(_exit_with, 7)
        assert time.monotonic() - started < 30
    finally:
        pool.close(force=True)
