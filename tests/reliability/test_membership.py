"""Who is in a communicator (issue 38, SPEC "Membership"): ranks pair only when something proves they are one job,
two jobs that could be confused fail together naming ATB_OPS_JOB_ID, valid jobs are never refused, re-made groups
and replaced peers meet, a ptrace-restricted host works, killed creations leave nothing, and settings that change
the protocol are compared. Every rank is a process of its own whose exit status is checked; values are compared
with goldens computed here."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.reliability import membership_tasks as tasks
from tests.support.environment import clean_env
from tests.support.launch import finish, free_port, run_programs, run_ranks, start
from tests.support.paths import REPO_ROOT


def _reports(exits) -> list[dict]:
    for e in exits:
        assert e.returncode == 0, f"exit {e.returncode}: {e.stderr[-3000:]}"
    return [json.loads(e.last_line()) for e in exits]


def _parent(script: str, args: list[str], env: dict[str, str], timeout: float = 300) -> list[dict]:
    """Runs a parent script (in a fresh interpreter) and returns its children's results."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    children = json.loads(done.stdout.strip().splitlines()[-1])
    for child in children:
        assert child["exit"] == 0, child
    return children


def _assert_own_data_or_refused(children: list[dict]) -> None:
    """Every rank of jobs alpha and beta got its own job's data, or refused naming ATB_OPS_JOB_ID."""
    tag = {"alpha": 1, "beta": 2}
    for child in children:
        report = child["report"]
        if "error" in report:
            assert "ATB_OPS_JOB_ID" in report["error"] and "cannot tell which processes" in report["error"], child
        else:
            assert report["wrong"] == 0 and report["tags"] == [tag[child["word"]]], children


# ---------------------------------------------------------------------------------- two jobs, one parent


@pytest.mark.parametrize("mode", ["at-once", "apart", "interleaved"])
def test_two_jobs_with_different_arguments_never_pair(mode):
    """Case 2: one parent runs `prog --job alpha` twice and `prog --job beta` twice (no job id, no MASTER_*): the
    argument words differ, so no program-name heuristic can group them. Whatever the start order, no rank ever gets
    the other job's data; ranks that cannot tell fail naming ATB_OPS_JOB_ID."""
    order = {"at-once": ["alpha:0", "alpha:1", "beta:0", "beta:1"],
             "apart": ["alpha:0", "alpha:1", "beta:0", "beta:1"],
             "interleaved": ["alpha:0", "beta:1", "alpha:1", "beta:0"]}[mode]
    env = clean_env(ATB_OPS_TIMEOUT="40")
    program = textwrap.dedent(tasks.ALLTOALL_BY_WORD)
    children = _parent(tasks.TWO_JOBS_PARENT, ["apart" if mode != "at-once" else mode, program, "-", *order], env)
    _assert_own_data_or_refused(children)
    if mode == "at-once":
        # Started together, both jobs are visible to every rank before anyone pairs: all refuse.
        assert all("error" in c["report"] for c in children), children


@pytest.mark.parametrize("unproven", [{"ATB_OPS_JOB_ID": ""}, {"MASTER_PORT": "29599"}],
                         ids=["empty-job-id", "master-port-alone"])
def test_variables_that_prove_nothing_never_let_two_jobs_pair(unproven):
    """One parent, two jobs interleaved, every rank with a variable that proves no job: an empty ATB_OPS_JOB_ID (an
    `export ATB_OPS_JOB_ID=$SLURM_JOB_ID` without Slurm) or MASTER_PORT alone. Each rank's key falls back to the
    parent guess, so its census must count the siblings too (it skipped any sibling that had the variable at all,
    whatever its value: alpha 0 and beta 1 paired, 4 wrong elements each). No rank gets the other job's data."""
    env = clean_env(ATB_OPS_TIMEOUT="40", **unproven)
    program = textwrap.dedent(tasks.ALLTOALL_BY_WORD)
    children = _parent(tasks.TWO_JOBS_PARENT, ["at-once", program, "-", "alpha:0", "beta:1", "alpha:1", "beta:0"], env)
    _assert_own_data_or_refused(children)


def test_two_shells_exporting_one_master_address_never_pair():
    """Two shells export the same MASTER_ADDR/MASTER_PORT (env:// boilerplate) and start a 2-rank job each, calling no
    init_process_group: nothing holds the port, so the pair proves no job (it paired the shells' ranks across jobs,
    alpha 0 with beta 1); it narrows each shell's parent guess instead, and each job gets its own data."""
    env = clean_env(ATB_OPS_TIMEOUT="40", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    program = textwrap.dedent(tasks.ALLTOALL_BY_WORD)
    shells = [subprocess.Popen([sys.executable, "-c", tasks.TWO_JOBS_PARENT, "apart", program, "-", *order],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
              for order in (["alpha:0", "alpha:1"], ["beta:1", "beta:0"])]
    tag = {"alpha": 1, "beta": 2}
    for shell in shells:
        out, err = shell.communicate(timeout=300)
        assert shell.returncode == 0, err[-3000:]
        for child in json.loads(out.strip().splitlines()[-1]):
            assert child["exit"] == 0 and child["report"] == {"wrong": 0, "tags": [tag[child["word"]]]}, child


@pytest.mark.parametrize("import_late", [False, True])
def test_two_jobs_that_create_long_after_their_start_never_pair(tmp_path, import_late):
    """Case 2, late: the four ranks start together but create their communicators 12-17 s later (a model loaded
    first), job beta's rank 0 first, then alpha's rank 1, alpha's rank 0, beta's rank 1: no rank is young any more,
    and beta 0 + alpha 1 would make a whole communicator. Siblings with atb_ops loaded are waited for, and so are
    siblings running the same program that import atb_ops only right before creating (import_late); claims stay:
    every rank fails naming ATB_OPS_JOB_ID, none gets the other job's data."""
    env = clean_env(ATB_OPS_TIMEOUT="40", GO_DIR=str(tmp_path), **({"IMPORT_LATE": "1"} if import_late else {}))
    program = textwrap.dedent(tasks.ALLTOALL_BY_WORD)
    children = _parent(tasks.TWO_JOBS_PARENT, ["late", program, "-", "beta:0", "alpha:1", "alpha:0", "beta:1"], env)
    for child in children:
        error = child["report"].get("error", "")
        assert "ATB_OPS_JOB_ID" in error and "cannot tell which processes" in error, children


def test_two_processes_claiming_the_root_rank_both_fail_at_once():
    """Two processes of one parent (no job id) both create rank 0, the root, of one 2-rank communicator: both fail at
    once naming ATB_OPS_JOB_ID. Before, the first to see the second claim failed, and the other, already waiting for
    its readers as root, waited out ATB_OPS_TIMEOUT and named only the missing rank 1."""
    began = time.monotonic()
    children = _parent(tasks.TWO_JOBS_PARENT, ["at-once", textwrap.dedent(tasks.ALLTOALL_BY_WORD), "-", "alpha:0",
                                               "beta:0"], clean_env(ATB_OPS_TIMEOUT="40"))
    for child in children:
        error = child["report"].get("error", "")
        assert "ATB_OPS_JOB_ID" in error and "claim rank 0" in error, children
    assert time.monotonic() - began < 30, children  # not ATB_OPS_TIMEOUT's 40 s


def test_one_job_that_swaps_its_ranks_is_not_refused():
    """Under the parent guess a claim stays live only while its communicator does: one job (no job id) that drops
    its operation and makes one with the ranks swapped meets again, right values (a rank that claims first waits
    for the other's old communicator to go)."""
    children = _parent(tasks.TWO_JOBS_PARENT, ["at-once", textwrap.dedent(tasks.RENUMBERED), "-", "x:0", "x:1"],
                       clean_env(ATB_OPS_TIMEOUT="40"))
    assert [c["report"] for c in children] == [{"wrong": 0}] * 2, children


def test_two_jobs_on_one_rank_table_never_pair(tmp_path):
    """Case 3: two jobs of HCCL's C API on one rank table (one program for both), started at once by one parent:
    the table names the communicator, not the job, so the parent scope joins it; no rank gets the other job's
    data, every rank fails naming ATB_OPS_JOB_ID."""
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps({
        "version": "1.0", "server_count": "1", "status": "completed",
        "server_list": [{"server_id": "127.0.0.1", "device": [
            {"device_id": str(r), "device_ip": f"192.0.2.{r + 1}", "rank_id": str(r)} for r in range(2)]}],
    }))
    env = clean_env(ATB_OPS_TIMEOUT="40")
    children = _parent(tasks.TWO_JOBS_PARENT, ["at-once", textwrap.dedent(tasks.HCCL_TABLE_ALLGATHER), str(table),
                                               "alpha:0", "alpha:1", "beta:0", "beta:1"], env)
    for child in children:
        report = child["report"]
        assert "error" in report, children
        assert "ATB_OPS_JOB_ID" in report["error"], child
    # With a job id per job, each job pairs with itself.
    for word in ("alpha", "beta"):
        ids = clean_env(ATB_OPS_TIMEOUT="40", ATB_OPS_JOB_ID=uuid.uuid4().hex)
        exits = finish([start(tasks.HCCL_TABLE_ALLGATHER, [str(r), word, str(table)], ids) for r in range(2)], 120)
        for report in _reports(exits):
            assert report == {"wrong": 0, "tags": [{"alpha": 1, "beta": 2}[word]]}, report


def test_two_commdomains_under_one_parent_are_not_refused():
    """Case 4a: a parent (not importing atb_ops) starts 4 ranks forming two 2-rank commDomains tp0 and tp1, with no
    job id: each domain's ranks are exactly its size, so nothing can be confused and both work."""
    env = clean_env(ATB_OPS_TIMEOUT="60")
    ranks = [f"{r % 2}:tp{r // 2}:2" for r in range(4)]
    children = _parent(tasks.SIBLINGS_PARENT, [textwrap.dedent(tasks.ALLGATHER_IN_DOMAIN), *ranks], env)
    assert [c["report"] for c in children] == [{"wrong": 0}] * 4, children


def test_single_rank_processes_of_one_parent_are_not_refused():
    """One parent (no job id) runs three processes of one program at once: two make a 1-rank AllReduce each (one
    worker per device), one has atb_ops loaded and never makes a communicator. A communicator of one rank meets
    nobody, so neither worker is taken for a second job or waits for the idle one (which outlives ATB_OPS_TIMEOUT,
    so a wait would end refused): both right."""
    children = _parent(tasks.SIBLINGS_PARENT, [textwrap.dedent(tasks.SINGLE_RANK), "rank:1", "rank:2", "idle:0"],
                       clean_env(ATB_OPS_TIMEOUT="8"))
    assert [c["report"] for c in children] == [{"wrong": 0}] * 3, children


@pytest.mark.parametrize("backend", ["shm", "hccl"])
def test_spawned_jobs_inside_torchrun_workers_never_pair(tmp_path, backend):
    """torchrun --standalone, 2 workers, each running a 2-process job of its own with torch.multiprocessing.spawn
    (commDomain "77" in both, every child creating at once, 10 rounds): each child gets its own job's sum. The
    children inherit torchrun's agent-store variables; only torchrun's own workers meet on that store (on it, the
    two jobs' children met under one key: wrong sums in 20 of 30 rounds, no error)."""
    script = tmp_path / "spawn_in_worker.py"
    script.write_text(tasks.SPAWN_IN_TORCHRUN_WORKER)
    env = clean_env(ATB_OPS_TIMEOUT="30", B=backend, ROUNDS="10", START_AT=str(time.time() + 12))
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           str(script)], capture_output=True, text=True, env=env, timeout=240, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    reports = sorted((json.loads(line[len("REPORT "):]) for line in done.stdout.splitlines()
                      if line.startswith("REPORT ")), key=lambda r: r["rank"])
    assert [r["rank"] for r in reports] == [0, 1], done.stdout
    for report in reports:
        assert report["children"] == [{"child": 0, "wrong": 0}, {"child": 1, "wrong": 0}], reports


def test_a_refusal_beside_an_idle_sibling_reaches_every_rank_at_once():
    """One parent (no job id) runs a 2-rank AllGather and a third process of the same program that loads atb_ops
    and never creates (it outlives ATB_OPS_TIMEOUT): the census cannot tell whether it is a rank of a second job, so
    both ranks refuse naming ATB_OPS_JOB_ID, within the timeout. The first to refuse tells the other (it had counted
    one process fewer once the first went, paired with nobody and timed out after twice the timeout, naming
    nothing)."""
    children = _parent(tasks.SIBLINGS_PARENT, [textwrap.dedent(tasks.IDLE_OR_ALLGATHER), "0:2", "1:2", "idle:14"],
                       clean_env(ATB_OPS_TIMEOUT="5"))
    for child in children[:2]:
        report = child["report"]
        assert "ATB_OPS_JOB_ID" in report.get("error", ""), children
        assert report["seconds"] < 8, children  # the 5 s census and the call, not 5 s more of a rendezvous
    assert children[2]["report"] == {"wrong": 0}, children


@pytest.mark.parametrize("parent_imports_atb_ops", [True, False])
def test_spawn_beside_a_manager_is_not_refused(tmp_path, parent_imports_atb_ops):
    """Case 4b: a 2-rank torch.multiprocessing.spawn whose parent also runs a spawn-context Manager (a third child
    of the same parent that never takes part). With atb_ops imported in the parent, spawn hands the ranks a job id
    of their own; without, the census waits until the Manager is old enough to be no rank."""
    script = tmp_path / "spawn_with_manager.py"  # spawn pickles rank_main by its module: a file, not -c
    script.write_text(tasks.SPAWN_WITH_MANAGER_PARENT)
    done = subprocess.run([sys.executable, str(script), str(int(parent_imports_atb_ops))], capture_output=True,
                          text=True, env=clean_env(ATB_OPS_TIMEOUT="60"), timeout=240,
                          cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["results"] == {"0": [1.0, 1.0, 2.0, 2.0], "1": [1.0, 1.0, 2.0, 2.0]}, report


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_processes_beside_a_manager_with_atb_ops_are_not_refused(tmp_path, method):
    """Case 4c: the parent imported atb_ops, so its Manager has atb_ops loaded (fork copies it, spawn re-imports the
    main module); the two multiprocessing.Process ranks have no job id. The Manager's server declares it takes no
    rank, so the ranks neither wait for it nor refuse."""
    script = tmp_path / "processes_with_manager.py"
    script.write_text(tasks.PROCESSES_WITH_MANAGER_PARENT)
    done = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True,
                          env=clean_env(ATB_OPS_TIMEOUT="60"), timeout=240, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exits"] == [0, 0], report
    assert report["results"] == {"0": [1.0, 1.0, 2.0, 2.0], "1": [1.0, 1.0, 2.0, 2.0]}, report
    assert report["seconds"] < 50, report  # never the 60 s timeout


def test_spawn_gives_each_call_its_own_job_id(tmp_path):
    """The parent's spawn hook: the children of one call share ATB_OPS_JOB_ID, two calls differ, and an id already
    in the environment is kept."""
    code = textwrap.dedent("""
        import json, os, multiprocessing
        import torch.multiprocessing as mp
        import atb_ops  # noqa: F401

        def child(rank, q):
            q.put(os.environ.get("ATB_OPS_JOB_ID"))

        if __name__ == "__main__":
            seen = []
            for preset in (None, None, "mine"):
                if preset:
                    os.environ["ATB_OPS_JOB_ID"] = preset
                q = multiprocessing.get_context("spawn").SimpleQueue()
                mp.spawn(child, args=(q,), nprocs=2)
                seen.append([q.get(), q.get()])
            print(json.dumps({"seen": seen, "after": os.environ.get("ATB_OPS_JOB_ID")}))
    """)
    script = tmp_path / "spawn_ids.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=clean_env(), timeout=120,
                          cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    first, second, preset = report["seen"]
    assert first[0] == first[1] and first[0].startswith("spawn-")
    assert second[0] == second[1] and second[0].startswith("spawn-") and second[0] != first[0]
    assert preset == ["mine", "mine"] and report["after"] == "mine"


def test_ranks_under_different_parents_are_told_why(tmp_path):
    """Case 10: each rank started under its own `sh -c` (different parents, no job id): the wait ends in a timeout
    that names the rank waiting in another job, both parents, and ATB_OPS_JOB_ID."""
    env = clean_env(ATB_OPS_TIMEOUT="6", DOMAIN="parents")
    program = textwrap.dedent(tasks.ALLTOALL_BY_WORD)
    exits = run_programs(lambda r: ["sh", "-c", f'"{sys.executable}" -c "$0" {r} 2 alpha; exit $?', program], 2, env,
                         timeout_s=120, cwd=REPO_ROOT)
    for e in exits:
        assert e.returncode == 0, e.stderr[-3000:]
        report = json.loads(e.last_line())
        assert report["error"].startswith("ERROR_COMM_TIMEOUT"), report
        assert "ATB_OPS_JOB_ID" in report["error"] and "parent process" in report["error"], report
        assert "in another job" in report["error"], report


# ------------------------------------------------------------------------------ re-made groups and operations


@pytest.mark.parametrize("clear", [False, True])
def test_remade_group_with_swapped_ranks_gives_torchs_answer(tmp_path, clear):
    """Case 1: all_gather on a gloo group, destroy_process_group, a new default group with the ranks swapped (torch
    names it "0" again): atb_ops.distributed gives exactly what torch's own all_gather gives, both times."""
    exits = [start(tasks.REMADE_GROUP, [str(r), str(int(clear)), str(tmp_path)], clean_env()) for r in range(2)]
    for results in _reports(finish(exits, 180)):
        assert len(results) == 2
        for result in results:
            assert result["ours"] == result["torch"] == [1.0, 1.0, 2.0, 2.0], results


@pytest.mark.parametrize("backend", ["shm", "gloo"])
def test_operation_remade_after_uneven_garbage_collection_meets(backend):
    """Case 5: identical code on both ranks drops an operation that sits in a reference cycle and makes a new one;
    only rank 1's collector ran, so rank 0 still holds the old communicator. The ranks meet in a fresh one within
    seconds (the first call of the new operation on the old communicator learns its peer left: on shm from the
    segment, on gloo from the connection the peer closed), right values."""
    store = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())} if backend == "gloo" else {}
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex, BACKEND=backend, **store)
    for report in _reports(run_ranks(tasks.CYCLE_REMADE, 2, env, timeout_s=150)):
        assert report.get("wrong") == 0, report
        assert report["seconds"] < 30, report  # never the 60 s timeout


def test_gloo_communicator_kept_by_one_rank_meets_the_others_new_one():
    """3 gloo ranks meeting node-locally: rank 0 keeps its operation, the others drop theirs; the new operations of
    all three meet, right values, well within ATB_OPS_TIMEOUT. Rank 0's call on its old communicator finds the
    connections its peers closed, which reset (its bytes were unread there) as often as they close: both are a
    release to follow (rank 0 used to fail on the reset at once, and the others waited out the timeout for it)."""
    env = clean_env(ATB_OPS_TIMEOUT="30", ATB_OPS_JOB_ID=uuid.uuid4().hex, WORLD="3")
    for report in _reports(run_ranks(tasks.KEPT_BY_ONE_RANK, 3, env, timeout_s=120)):
        assert report.get("sum") == [6.0, 6.0, 6.0], report
        assert report["seconds"] < 20, report


@pytest.mark.parametrize("backend", ["shm", "gloo"])
def test_new_operations_after_a_peer_gave_up_pair_call_for_call(backend):
    """Rank 1 times out on a call rank 0 never makes (rank 0 sleeps past ATB_OPS_TIMEOUT), then both make a new
    operation with the same param for each of three calls. Rank 0's cached communicator is one its peer gave up on:
    it is never handed to a new operation (shm: the segment says so; gloo: a note under the group's keys in its
    store), so the ranks meet in a fresh one and call i pairs with call i. Before, rank 0's first new operation got
    the old one and every later call of one rank paired with the other's next ([100, 1], [200, 101] on shm, [0, 101],
    [100, 201] on gloo), then a timeout."""
    store = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())} if backend == "gloo" else {}
    env = clean_env(ATB_OPS_TIMEOUT="4", ATB_OPS_JOB_ID=uuid.uuid4().hex, BACKEND=backend, **store)
    reports = _reports(run_ranks(tasks.GAVE_UP_THEN_NEW_OPERATIONS, 2, env, timeout_s=120))
    assert reports[0]["alone"] is None and "ERROR_COMM_TIMEOUT" in reports[1]["alone"], reports
    for report in reports:
        assert report["got"] == [[100.0 * i, 100.0 * i + 1] for i in range(3)], reports


def _replaced_rank(program: str, extra: list[str], env: dict[str, str]) -> tuple[dict, dict]:
    survivor = start(program, ["0", "survivor", *extra], env)
    victim = start(program, ["1", "victim", *extra], env)
    (victim_exit,) = finish([victim], 120)
    assert victim_exit.returncode == 0, victim_exit.stderr[-3000:]
    line = survivor.stdout.readline()  # {"stage": "lost"} once it saw the death and made a new operation
    assert json.loads(line) == {"stage": "lost"}, (line, survivor.stderr.read()[-3000:] if not line else "")
    (replacement,) = _reports(finish([start(program, ["1", "replacement", *extra], env)], 120))
    (survivor_exit,) = finish([survivor], 120)
    (survived,) = _reports([survivor_exit])
    return survived, replacement


def test_replaced_rank_meets_the_survivors_new_operation():
    """Case 6, ATB surface: rank 1 dies; rank 0's next call names its death, rank 0 makes a new operation (README's
    recovery) and a fresh process for rank 1 meets it, although the survivor has made a communicator of that
    commDomain before and the newcomer has not."""
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex)
    survived, replacement = _replaced_rank(tasks.REPLACED_RANK, [], env)
    assert survived["first_error"].startswith("ERROR_COMM_PEER_DIED"), survived
    assert survived["wrong"] == 0 and replacement["wrong"] == 0, (survived, replacement)


def test_replaced_rank_meets_the_reinitialised_atb_ops_group():
    """Case 6, torch.distributed backend "atb_ops": the survivor destroys and re-initialises its group after the
    death; the replacement meets it."""
    env = clean_env(ATB_OPS_TIMEOUT="60")
    survived, replacement = _replaced_rank(tasks.REPLACED_RANK_C10D, [str(free_port())], env)
    assert survived["first_error"], survived
    assert survived["wrong"] == 0 and replacement["wrong"] == 0, (survived, replacement)


# ------------------------------------------------------------------------------------- ptrace restricted


def _ptrace_shim(tmp_path: Path) -> Path | None:
    """The LD_PRELOAD stand-in for Yama (tests/native/shims/ptrace_scope_shim.c), built here; None without a C
    compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    out = tmp_path / "ptrace_scope_shim.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out),
                    str(REPO_ROOT / "tests" / "native" / "shims" / "ptrace_scope_shim.c"), "-ldl"], check=True)
    return out


@pytest.mark.parametrize("mode", ["yama", "never"])
def test_ptrace_restricted_host_moves_every_byte(tmp_path, mode):
    """Case 7: process_vm_readv refused between sibling ranks unless the target named its tracer (Yama's
    ptrace_scope=1, Ubuntu's default for non-root users), or refused always. AllToAllVV2 16 MiB through execute_out
    with ordinary tensors and through execute(), AllGather, Broadcast and Send/Recv all give the golden values: with
    "yama" the ranks allow each other (PR_SET_PTRACER) and copy in place; with "never" every rank stages its large
    messages in the shared-memory arena instead, together."""
    shim = _ptrace_shim(tmp_path)
    if shim is None:
        pytest.skip("no C compiler to build the ptrace shim")
    marks = tmp_path / "marks"
    marks.mkdir()
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex, LD_PRELOAD=str(shim),
                    PTRACE_SHIM_DIR=str(marks), PTRACE_SHIM_MODE=mode)
    reports = _reports(run_ranks(tasks.PTRACE_RESTRICTED, 2, env, timeout_s=240))
    for report in reports:
        assert report.get("wrong") == 0, report
        stats = report["stats"]
        if mode == "yama":
            assert stats["cross_memory"] == 1 and stats["vm_bytes"] > 0 and stats["staged_bytes"] == 0, stats
        else:
            assert stats["cross_memory"] == 0 and stats["vm_bytes"] == 0 and stats["staged_bytes"] > 0, stats
    if mode == "yama":
        assert len(list(marks.iterdir())) == 2  # each rank named its tracer


# ----------------------------------------------------------------------------------------- leftovers


def test_killed_creation_leaves_the_folder_clean(tmp_path):
    """Case 8: the root of an 8-rank job is killed with SIGTERM (as mp.spawn stops ranks) while it waits in
    creation; its segment, record and claim stay only until the next creation in that folder, whose job then
    leaves the folder empty."""
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex, ATB_OPS_SHM_DIR=str(tmp_path))
    root = start(tasks.LONELY_CREATION, ["0"], env)
    assert root.stdout.readline().strip() == "waiting"
    folder = tmp_path / f"atb_ops-{os.getuid()}"
    deadline = time.time() + 30
    while time.time() < deadline and len(list(folder.glob("*"))) < 3:
        time.sleep(0.05)
    time.sleep(0.2)
    root.send_signal(signal.SIGTERM)
    root.wait(30)
    left = sorted(p.name.split(".")[0] for p in folder.iterdir())
    assert left == ["clm", "rdv", "seg"], left
    healthy = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex, ATB_OPS_SHM_DIR=str(tmp_path))
    exits = [start(tasks.ALLGATHER_IN_DOMAIN, [str(r), "healthy", "2"], healthy) for r in range(2)]
    assert _reports(finish(exits, 120)) == [{"wrong": 0}] * 2
    assert list(folder.iterdir()) == []


# ------------------------------------------------------------------------------------ settings compared


@pytest.mark.parametrize("variable,values", [("ATB_OPS_CPU_PATH", ("shm", "group")),
                                             ("ATB_OPS_HCCL_ALLTOALLV", ("alltoallv", "p2p")),
                                             ("ATB_OPS_GLOO_STREAMS", ("1", "2")),
                                             ("ATB_OPS_SHM_EAGER", ("0", "65536")),
                                             ("ATB_OPS_SHM_SPLIT", ("0", "1")),
                                             ("ATB_OPS_SHM_DIR", ("/dev/shm", "@TMP@"))])
def test_protocol_settings_that_differ_are_named_at_creation(tmp_path, variable, values):
    """Case 9: a setting that decides what goes on the wire differs between the ranks: every rank fails at once
    (not after ATB_OPS_TIMEOUT) naming the variable and both values. ATB_OPS_SHM_DIR: ranks meeting through the
    store look for the root's segment in their own folder (it was "not on this host", then a timeout)."""
    # A second folder on the same tmpfs (on another file system the ranks would count as two hosts).
    other = Path("/dev/shm") / f"atb_ops_test_{uuid.uuid4().hex}"
    values = tuple(str(other) if v == "@TMP@" else v for v in values)
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex, STORE_FILE=str(tmp_path / "store"))
    if variable == "ATB_OPS_HCCL_ALLTOALLV":
        from atb_ops.emulation import launcher  # the NPU emulation: backend "hccl" runs HCCL's API on CPU

        env.update(launcher.emulation_env("cpu", base=env))
    other.mkdir(mode=0o700)
    try:
        exits = [start(tasks.SETTING_DIFFERS, [str(r), values[r], variable], env) for r in range(2)]
        reports = _reports(finish(exits, 150))
    finally:
        shutil.rmtree(other, ignore_errors=True)
    for report in reports:
        assert "error" in report, report
        assert variable in report["error"] and all(repr(v) in report["error"] or f"'{v}'" in report["error"]
                                                    for v in values), report
        assert report["seconds"] < 20, report


# ------------------------------------------------------------------------------- gloo's ways to meet


def test_gloo_without_a_store_meets_node_locally():
    """SPEC's bootstrap for backend "gloo" with no torch.distributed and no MASTER_ADDR/MASTER_PORT: the node-local
    rendezvous of the job and commDomain, as shm's (its root serves the group's store on this host)."""
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex)
    assert not {"MASTER_ADDR", "MASTER_PORT"} & set(env)
    exits = [start(tasks.ALLGATHER_IN_DOMAIN, [str(r), "local-gloo", "2", "gloo"], env) for r in range(2)]
    assert _reports(finish(exits, 120)) == [{"wrong": 0}] * 2


def test_gloo_default_group_ranks_that_disagree_on_rank_size_are_told():
    """MASTER_ADDR/MASTER_PORT without RANK/WORLD_SIZE: atb_ops makes the default group from each rank's own
    rankSize. Ranks that disagree (2 against 3) both fail at once naming both sizes; before, torch's rendezvous
    waited for a world size the ranks never made up (sometimes past ATB_OPS_TIMEOUT)."""
    env = clean_env(ATB_OPS_TIMEOUT="30", ATB_OPS_JOB_ID=uuid.uuid4().hex, MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=str(free_port()))
    began = time.monotonic()
    exits = [start(tasks.ALLGATHER_IN_DOMAIN, [str(r), "sizes", str(size), "gloo"], env)
             for r, size in enumerate((2, 3))]
    for report in _reports(finish(exits, 120)):
        error = report.get("error", "")
        assert "ranks disagree on the rankSize" in error and "rankSize 2" in error and "rankSize 3" in error, report
    assert time.monotonic() - began < 25, "not within ATB_OPS_TIMEOUT"


# ------------------------------------------------------------------------------------------- read items


def test_gloo_subcommunicator_first_uses_the_launchers_rank():
    """Without a default group, the first gloo communicator makes one from MASTER_ADDR/PORT: with RANK and
    WORLD_SIZE set (torchrun sets them), as the launcher's rank of its world, so a 2-rank sub-communicator on each
    half of a 4-rank job never gives two processes rank 0 of the default group."""
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex)
    port = str(free_port())
    exits = [start(tasks.GLOO_SUBCOMMUNICATOR_FIRST, [str(r), port], env) for r in range(4)]
    assert _reports(finish(exits, 180)) == [{"wrong": 0}] * 4


def test_call_labels_that_share_31_characters_still_differ(tmp_path):
    """torch.distributed.reduce_scatter and torch.distributed.reduce_scatter_tensor share their first 31 characters
    (a signature keeps 31): a long label keeps its head and a digest of all of it, so ranks that called the two
    forms are told, on every rank, instead of passing as one call."""
    env = clean_env(ATB_OPS_TIMEOUT="60")
    store = str(tmp_path / "store")
    for report in _reports(finish([start(tasks.LABELS_SHARING_A_PREFIX, [str(r), store], env) for r in range(2)],
                                  120)):
        assert "error" in report and "operation" in report["error"], report
        assert "torch.distributed.redu~" in report["error"], report


@pytest.mark.parametrize("backend", ["shm", "hccl"])
def test_a_rank_that_remakes_its_operation_each_call_meets_one_that_keeps_it(backend):
    """ATB's send/recv test makes a new RecvOperation per dtype on the receiving ranks while the senders keep
    theirs. atb_ops releases a communicator with its last operation (ATB pools them for the process's life), so the
    sender's next call finds its peer gone before any data moves (ERROR_COMM_PEER_LEFT) and moves to the fresh
    communicator the receiver's new operation is making: every round's values arrive, on shm and on HCCL's C API on
    CPU (under the NPU emulation), within seconds."""
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex, BACKEND=backend)
    if backend == "hccl":
        from atb_ops.emulation import launcher

        env["EMULATE"] = "1"
        env.update(launcher.emulation_env("cpu", base=env))
    began = time.monotonic()
    assert _reports(run_ranks(tasks.REMADE_EACH_CALL, 2, env, timeout_s=150)) == [{"wrong": 0}] * 2
    assert time.monotonic() - began < 60


@pytest.mark.parametrize("how", ["released", "exits"])
def test_a_peer_that_finished_and_went_does_not_fail_a_wait_on_another(how):
    """A rank that has done its part may drop its operation or exit while a peer still waits on a third rank
    (the last collective of a job, a rank with nothing to receive): that wait goes on and its data arrive. Before,
    every wait's health check named any peer that had gone (ERROR_COMM_PEER_LEFT or ERROR_COMM_PEER_DIED), which
    failed a LinearParallel MoE test in CI."""
    env = clean_env(ATB_OPS_TIMEOUT="60", ATB_OPS_JOB_ID=uuid.uuid4().hex)
    reports = _reports(run_ranks(tasks.PEER_GOES_WHILE_ANOTHER_IS_AWAITED, 3, env, timeout_s=120, args=[how]))
    assert reports == [{"wrong": 0}] * 3, reports
