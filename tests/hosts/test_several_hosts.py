"""Several hosts (issue 39, SPEC "Several hosts"), on emulated hosts: network namespaces on a private bridge, each
with its own hostname and /dev/shm (atb_ops.emulated_hosts). Every surface that works on one host works across
two: ATB operators after init_process_group (backend "hccl", "auto"), HCCL's C API by root info and by a rank table
of two servers, torch.distributed's backend "atb_ops", torchrun with a DDP step; "shm" across hosts is one clear
error at once; a lost host is named by every survivor. Values against goldens, every rank's exit status checked.
Needs root (CI runs as root); skipped elsewhere with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from atb_ops import emulated_hosts
from tests.hosts import hosts_tasks as tasks
from tests.support.environment import clean_env
from tests.support.launch import finish
from tests.support.paths import REPO_ROOT

_why = emulated_hosts.available()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"emulated hosts unavailable: {_why}")

PORT = "29511"  # per network namespace: never clashes with the machine's own


def _start(hosts: emulated_hosts.EmulatedHosts, code: str, placement: list[int], args, env: dict[str, str]):
    """Rank r runs `code` (dedented) on host placement[r]; args(r) are its arguments after the rank."""
    program = textwrap.dedent(code)
    return [hosts.popen(h, [sys.executable, "-c", program, str(r), *args(r)], env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT) for r, h in enumerate(placement)]


def _checked(procs, timeout_s: float = 180):
    """Every rank's exit, once each exited 0 (checked here, rank by rank)."""
    exits = finish(procs, timeout_s)
    for exit_ in exits:
        assert exit_.returncode == 0, f"exit {exit_.returncode}: {exit_.stderr[-3000:]}"
    return exits


def _finish(procs, timeout_s: float = 180) -> list[dict]:
    """Every rank's report line, once each exited 0 (checked here, rank by rank)."""
    return [json.loads(exit_.last_line()) for exit_ in _checked(procs, timeout_s)]


def _env(**extra: str) -> dict[str, str]:
    return clean_env(ATB_OPS_TIMEOUT="60", MASTER_ADDR="h0", MASTER_PORT=PORT, **extra)


@pytest.fixture(scope="module")
def two_hosts():
    with emulated_hosts.EmulatedHosts(2) as hosts:
        yield hosts


# ------------------------------------------------------------------------------------------ ATB operators


@pytest.mark.parametrize("backend", ["hccl", "auto"])
def test_atb_operators_span_hosts_after_init(two_hosts, backend):
    """2 hosts x 2 ranks after init_process_group("gloo"): AllToAllVV2 (uneven counts), AllReduce and AllGather
    with ATB's default backend "hccl" (and "auto") give the golden values; they run in two levels, shared memory
    within each host and gloo between them (where each rank of a host would otherwise wait for shared memory its
    peers cannot see); the third repeat of the AllToAllVV2 brings its chunks between hosts inside the comparison."""
    procs = _start(two_hosts, tasks.ATB_AFTER_INIT, [0, 0, 1, 1], lambda r: ["4", backend], _env())
    for rank, report in enumerate(_finish(procs)):
        assert report.get("wrong") == 0, report
        assert report["backends"] == ["shm+gloo"], report
        assert report["rode"] == _rode_between_hosts([0, 0, 1, 1], rank), report


@pytest.mark.parametrize(
    ("placement", "two_level", "backend"),
    [
        ([0, 0, 1, 1], "1", "shm+gloo"),  # 2 hosts x 2 ranks, ranks host by host
        ([0, 1, 0, 1], "1", "shm+gloo"),  # 2 hosts x 2 ranks, ranks alternating: the gather is put in rank order
        ([0, 0, 1, 1], "0", "gloo"),  # ATB_OPS_TWO_LEVEL=0: one gloo group of every rank
        ([0, 1], "1", "gloo"),  # one rank per host: nothing to share within a host
        ([0, 0, 1], "1", "gloo"),  # hosts with different numbers of ranks
    ],
    ids=["2x2", "2x2-alternating", "2x2-flat", "2x1", "2+1"],
)
def test_every_collective_across_hosts(two_hosts, placement, two_level, backend):
    """Every collective of ATB's (backend "hccl") on CPU ranks spanning two hosts, against exact goldens: all-reduce
    small, sharded and past 16 MiB (odd lengths, bf16, max; two gloo ranks reduce pairwise, in place in two levels),
    all-gather, broadcast from every root, atb_ops.quant's int8 all-reduce, reduce-scatter, AllToAllVV2 with uneven
    counts; in two levels where every host holds the same number of ranks, else one gloo group. In two levels, the
    third repeat of an uneven AllToAllVV2 (scattered displacements), and a smaller one after it, bring exactly their
    chunks between hosts inside the comparison; a larger one after that, as much as the room holds, and the rest
    after it."""
    size = str(len(placement))
    procs = _start(two_hosts, tasks.EVERY_COLLECTIVE, placement, lambda r: [size], _env(ATB_OPS_TWO_LEVEL=two_level))
    for rank, report in enumerate(_finish(procs)):
        assert (report["wrong"], report["backends"]) == (0, [backend]), report
        if backend == "shm+gloo":
            assert report["rode"] == _rode_between_hosts(placement, rank), report


@pytest.mark.parametrize(
    ("placement", "seed"),
    [([0, 0, 1, 1], 7), ([0, 1, 0, 1], 32), ([0, 0, 0, 1, 1, 1], 30), ([0, 1], 5)],
    ids=["2x2-seed7", "2x2-alternating-seed32", "2x3-seed30", "2x1-seed5"],
)
def test_random_alltoallv_sequences_across_hosts(two_hosts, placement, seed):
    """A seeded sequence of AllToAllVV2 calls the same on every rank: random dtypes (odd byte counts too), counts
    from tiny to past 1 MiB between hosts with zeros among them, chunks in random order (gaps in the input),
    a third of the calls repeating the counts before them (rooms learned, then outgrown: whole and partial rides),
    AllReduce and AllGather calls between. Every output element against its golden (outputs start as sentinels);
    chunks did ride in the comparison. The seeds (24 calls each) include a message past 4 MiB (gloo's pieces) and
    5-10 repeats; more seeds were run by hand (the session's note)."""
    size = str(len(placement))
    procs = _start(two_hosts, tasks.RANDOM_ALLTOALLV, placement, lambda r: [size, str(seed), "24"], _env())
    reports = _finish(procs, timeout_s=300)
    for report in reports:
        assert report.get("wrong") == 0 and report["calls"] == 24, report
    assert sum(report["rode"] for report in reports) > 0, reports


def _rode_between_hosts(placement: list[int], rank: int) -> list[int]:
    """Bytes of the tasks' uneven AllToAllVV2 (rank i sends (i + j + 1) * scale floats to rank j) that come to `rank`
    inside two levels' comparison: the chunks of the rank of its local index on each other host for every rank of its
    own host (it hands the others' on), in its third call of scale 3001 and the call of 1500 after it, all of them;
    in the next call of 3001, as much of them as the room learned from the 1500 holds (the most bytes any rank sent
    one other host then)."""
    def local(r: int) -> int:
        return placement[:r].count(placement[r])

    def to_host(i: int, host: int, scale: int) -> int:
        return sum((i + j + 1) * scale * 4 for j, h in enumerate(placement) if h == host)

    here = placement[rank]
    senders = [i for i, h in enumerate(placement) if h != here and local(i) == local(rank)]
    room = max(to_host(i, h, 1500) for i in range(len(placement)) for h in set(placement) if h != placement[i])
    return [sum(to_host(i, here, 3001) for i in senders), sum(to_host(i, here, 1500) for i in senders),
            sum(min(to_host(i, here, 3001), room) for i in senders)]


@pytest.mark.parametrize("streams", ["2", "1"])
def test_large_calls_split_over_streams_between_hosts(two_hosts, streams):
    """2 hosts x 1 rank: an AllToAllVV2 whose messages to the other host pass 8 MiB (scattered displacements), and
    AllGathers of 9 MiB + 5 and 5 MiB + 3 bytes per rank, give the golden values: by send/recv, over two connections
    per pair from 8 MiB (ATB_OPS_GLOO_STREAMS's default: every byte of those streamed), on one connection in pieces
    of at most 2 MiB from 4 MiB (none streamed);
    all-reduces past 8 MiB (float32, and bfloat16 reduced widened) beside it stay on one connection, and only the
    one past 16 MiB is reduced pairwise (its bytes exactly, on both ranks)."""
    procs = _start(two_hosts, tasks.LARGE_OVER_STREAMS, [0, 1], lambda r: ["2"], _env(ATB_OPS_GLOO_STREAMS=streams))
    for rank, report in enumerate(_finish(procs)):
        assert report.get("wrong") == 0 and report["backends"] == ["gloo"], report
        assert report["streamed"] == (_streamed(rank, 2) if streams == "2" else 0), report
        assert report["pairwise"] == ((17 << 20) // 4 + 3) * 4, report


@pytest.mark.parametrize("placement", [[0, 1], [0, 0, 1, 1]], ids=["2x1", "2x2"])
def test_repeated_calls_ride_in_the_comparison_between_hosts(two_hosts, placement):
    """One gloo group (2 x 1): a call repeated in a loop is done inside its comparison from its third time on (its
    data beside the signature, one round instead of two; all-reduces up to 4 MiB, the rest up to 2 MiB), with new
    values every time and the same results as the other way; a call alternating with a small one takes two rounds
    again until the loop has repeated twice (the calls that followed the small one then needed its room), then rides;
    a rank that then passes another size is one error on every rank, the output untouched, as before any call was
    learned. Two levels (2 x 2) keep the usual room for what every rank's record carries (each local index takes its
    host's records to the other host), so of the calls above only an all-to-all rides, and only its chunks between
    hosts, as it routes them by hosts: each rank's chunks for the other host beside its host's records, from the
    third call on and in the alternation's fourth (both local ranks' chunks arrive at each rank), with the same
    results."""
    size = len(placement)
    procs = _start(two_hosts, tasks.REPEATED_CALLS, placement, lambda r: [str(size)], _env())
    unit = (1 << 17) // (size - 1)
    for rank, report in enumerate(_finish(procs)):
        assert report.get("wrong") == 0, report
        # Bytes taken from the others in the calls done in their comparison: from the third of a kind on; from the
        # first where the call before needed as much (max after sum, all-gather after the all-reduces); in the
        # alternation, the small all-reduces (32 B from each other rank) and the fourth all-to-all.
        small = 4 * 32 * (size - 1)
        if size == 2:
            assert report["eager"] == {"alltoall": 3 * unit * 4, "allreduce": 3 << 20, "max": 5 << 20,
                                       "allreduce_4m": 3 << 22, "allgather": 5 << 17,
                                       "broadcast": (3 << 18) if rank != 0 else 0,
                                       "alternating": small + unit * 4}, report
        else:
            # Chunks for both of this host's ranks arrive at each rank (it hands one on in the host).
            rode = 2 * unit * 4
            assert report["eager"] == {"alltoall": 3 * rode, "allreduce": 0, "max": 0, "allreduce_4m": 0,
                                       "allgather": 0, "broadcast": 0, "alternating": small + rode}, report
        assert "ERROR_INVALID" in report["error"] and "count" in report["error"].lower(), report
        assert report["untouched"], report


def _streamed(rank: int, size: int) -> int:
    """Bytes LARGE_OVER_STREAMS splits over the connections on `rank`: every message of its all-to-all to another
    rank and its 9 MiB all-gather's block to each other rank (each past 8 MiB; the 5 MiB all-gather and the all-reduces
    stay on one connection)."""
    return sum((rank + j + 1) * 1_100_003 * 4 for j in range(size) if j != rank) + (size - 1) * ((9 << 20) + 5)


def _disagreeing(hosts: emulated_hosts.EmulatedHosts, how: str, cases: list[tuple[int, str]]) -> list[list[dict]]:
    """tasks.DISAGREEING_SIZES on 2 hosts x 2 ranks in two levels, its cases (numel, odd ranks) one after another in
    one launch (on the same communicators: a refused call leaves them usable). Returns each case's reports, rank
    by rank, after checking what holds for every case: nothing wrong (the agreed calls' values, the sentinels of a
    refused AllToAllVV2's output) and every rank raised at once, well within ATB_OPS_TIMEOUT (60 s), not only the
    ranks of the host where an odd one is while the others wait between hosts."""
    procs = _start(hosts, tasks.DISAGREEING_SIZES, [0, 0, 1, 1],
                   lambda r: ["4", how, *(f"{numel}:{odd}" for numel, odd in cases)], _env())
    by_rank = [json.loads(exit_.last_line()) for exit_ in _checked(procs)]
    assert all(len(reports) == len(cases) for reports in by_rank), by_rank
    by_case = [list(reports) for reports in zip(*by_rank, strict=True)]
    for case, reports in zip(cases, by_case, strict=True):
        for report in reports:
            assert report["wrong"] == 0, (case, report)
            assert "error" in report and report["seconds"] < 20, (case, report)
    return by_case


# (numel, odd ranks): large (sharded, or by hosts for an all-to-all) and small (done inside the comparison); one
# rank of either host, or every rank of host 1, so that each host agrees within itself.
_LARGE_AND_SMALL = [(100_000, "3"), (100_000, "1"), (100_000, "2,3"), (12, "3"), (12, "1"), (12, "2,3")]


def test_ranks_that_disagree_across_hosts_all_raise_at_once(two_hosts):
    """Some ranks pass one element more to an AllReduce: every rank, on both hosts, raises
    ERROR_INVALID_TENSOR_SIZE naming the sizes at once."""
    by_case = _disagreeing(two_hosts, "size", _LARGE_AND_SMALL)
    for (numel, _), reports in zip(_LARGE_AND_SMALL, by_case, strict=True):
        for report in reports:
            assert report["error"].startswith("ERROR_INVALID_TENSOR_SIZE"), report
            assert "size differs" in report["error"] and f"{numel + 1} elements" in report["error"], report


def test_ranks_calling_different_collectives_across_hosts_all_raise_at_once(two_hosts):
    """Some ranks call AllToAllVV2 (which moves by hosts) where the others call AllReduce (which runs in parts):
    every rank raises ERROR_INVALID_PARAM naming both operators at once, not after ATB_OPS_TIMEOUT with each side
    waiting in an exchange the other never joins."""
    cases = [(100_000, "3"), (100_000, "2,3"), (12, "3"), (12, "2,3")]
    for reports in _disagreeing(two_hosts, "call", cases):
        for report in reports:
            assert report["error"].startswith("ERROR_INVALID_PARAM"), report
            assert "AllReduceOperation" in report["error"] and "AllToAllVV2Operation" in report["error"], report


def test_alltoall_counts_that_disagree_across_hosts_all_raise_at_once(two_hosts):
    """One rank expects one element more from rank 0 in an AllToAllVV2, large enough to move by hosts (its data
    routed by the counts every rank compared) or small (done inside the comparison): every rank raises
    ERROR_INVALID_PARAM naming the count mismatch, at once, and writes nothing into its sentinel-filled output."""
    cases = [(200_000, "3"), (200_000, "1"), (12, "3"), (12, "1")]
    for (numel, odd), reports in zip(cases, _disagreeing(two_hosts, "counts", cases), strict=True):
        split = numel // 4
        for report in reports:
            assert report["error"].startswith("ERROR_INVALID_PARAM"), report
            assert (f"rank 0 sends {split} elements to rank {odd}, but rank {odd} expects {split + 1} from rank 0"
                    in report["error"]), report


def test_two_levels_small_calls_ride_in_the_comparison_and_waits_yield(two_hosts):
    """2 hosts x 2 ranks: an AllReduce of 40 bytes is done inside the comparison of every rank's call (the other 3
    ranks' inputs counted as eager bytes, nothing more), one of 64 KiB is not; and as both emulated hosts run on
    this one kernel, the shm part's waits spin only where this machine has a core for each of the 4 ranks (they
    yield on 2 cores, where spinning cost each 64 KiB all-reduce ~3 ms)."""
    procs = _start(two_hosts, tasks.SMALL_AND_SHARDED, [0, 0, 1, 1], lambda r: ["4"], _env())
    cores = len(os.sched_getaffinity(0))
    for report in _finish(procs):
        assert report.get("wrong") == 0, report
        small, sharded = report["stats"]
        assert small["backend"] == "shm+gloo" and small["collectives"] == 1, report
        assert small["eager_bytes"] == 3 * 40 and sharded["eager_bytes"] == 3 * 40, report
        assert small["spins"] == sharded["spins"] == int(cores >= 4), report


@pytest.mark.parametrize(
    ("placement", "cpu_path", "backend"),
    [
        ([0, 0, 1, 1], "auto", "shm+gloo"),  # two levels: shared memory in each host, gloo between
        ([0, 1, 0, 1], "auto", "shm+gloo"),  # ranks alternating between the hosts
        ([0, 0, 1, 1], "group", "gloo"),  # ATB_OPS_CPU_PATH=group: the group's own backend alone
        ([0, 1], "auto", "gloo"),  # one rank per host
    ],
    ids=["2x2", "2x2-alternating", "2x2-group", "2x1"],
)
def test_distributed_collectives_across_hosts(two_hosts, placement, cpu_path, backend):
    """atb_ops.distributed over a torch.distributed group spanning two hosts: every collective (and atb_ops.quant's
    int8 all-reduce) against exact goldens, in two levels where the hosts hold the same number of ranks (the group
    itself carries what runs among all ranks), on the group alone where ATB_OPS_CPU_PATH=group asks for it; a float
    int8 all-reduce within its error bound and the same bits on every rank."""
    size = str(len(placement))
    procs = _start(two_hosts, tasks.DISTRIBUTED_COLLECTIVES, placement, lambda r: [size],
                   _env(ATB_OPS_CPU_PATH=cpu_path))
    reports = _finish(procs)
    for report in reports:
        assert (report["wrong"], report["backend"], report["quant_wrong"]) == (0, backend, 0), report
    assert len({report["digest"] for report in reports}) == 1, reports


def test_every_collective_on_three_hosts():
    """Three hosts: 3 x 1 ranks (one gloo group) and 3 x 2 ranks (two levels), every collective against exact
    goldens; on 3 x 1 also the large all-to-all messages that two connections per pair carry (and the all-reduce
    past 16 MiB by gloo's ring: pairwise is for two ranks)."""
    with emulated_hosts.EmulatedHosts(3) as hosts:
        for placement, backend in (([0, 1, 2], "gloo"), ([0, 0, 1, 1, 2, 2], "shm+gloo")):
            size = str(len(placement))
            procs = _start(hosts, tasks.EVERY_COLLECTIVE, placement, lambda r, size=size: [size], _env())
            for rank, report in enumerate(_finish(procs)):
                assert (report["wrong"], report["backends"]) == (0, [backend]), (placement, report)
                if backend == "shm+gloo":
                    assert report["rode"] == _rode_between_hosts(placement, rank), (placement, report)
        # One rank per host: large all-to-all messages split over two connections per pair, to two peers at once.
        procs = _start(hosts, tasks.LARGE_OVER_STREAMS, [0, 1, 2], lambda r: ["3"], _env())
        for rank, report in enumerate(_finish(procs)):
            assert report.get("wrong") == 0 and report["streamed"] == _streamed(rank, 3), report
            assert report["pairwise"] == 0, report  # three ranks: gloo's ring


def test_atb_operators_under_the_npu_emulation_span_hosts(two_hosts):
    """The same under `python -m atb_ops run`'s environment: backend "hccl" is HCCL's C API on CPU, whose root
    info now carries the root's address and store, so ranks on both hosts join it."""
    from atb_ops.emulation import launcher

    env = _env(EMULATE="1")
    env.update(launcher.emulation_env("cpu", base=env))
    procs = _start(two_hosts, tasks.ATB_AFTER_INIT, [0, 0, 1, 1], lambda r: ["4", "hccl"], env)
    for report in _finish(procs):
        assert report.get("wrong") == 0, report


def test_shm_across_hosts_is_one_error_at_once(two_hosts):
    """backend "shm" by name on ranks of two hosts: every rank raises within seconds, naming the hosts and the
    backends that work, instead of the root waiting out ATB_OPS_TIMEOUT."""
    procs = _start(two_hosts, tasks.ATB_AFTER_INIT, [0, 1], lambda r: ["2", "shm"], _env())
    for report in _finish(procs):
        assert "error" in report, report
        message = report["error"]
        assert message.startswith("ERROR_INVALID_PARAM") and "'h0'" in message and "'h1'" in message, message
        assert "'auto'" in message and "'gloo'" in message, message
        assert report["seconds"] < 20, report


def test_nothing_to_meet_on_across_hosts_says_how_at_once(two_hosts):
    """Ranks on two hosts with no torch.distributed, no rank table and no hcclComm, started like torchrun's
    (LOCAL_WORLD_SIZE 1 of 2): the error comes at once and names the three ways ranks on several hosts meet."""
    env = _env(INIT="0", LOCAL_WORLD_SIZE="1", WORLD_SIZE="2")
    procs = _start(two_hosts, tasks.ATB_AFTER_INIT, [0, 1], lambda r: ["2", "hccl"], env)
    for report in _finish(procs):
        message = report.get("error", "")
        assert "rankTableFile" in message and "hcclComm" in message and "torch.distributed" in message, report
        assert report["seconds"] < 20, report


# -------------------------------------------------------------------------------------------- HCCL's C API


@pytest.mark.parametrize("placement", [[0, 0, 1, 1], [0, 1]], ids=["2x2", "2x1"])
def test_hccl_root_info_joins_from_another_host(two_hosts, tmp_path, placement):
    """HCCL's C API with no torch.distributed: rank 0's HcclGetRootInfo bytes are handed to the others out of
    band (a file here, MPI_Bcast in HCCL's examples); HcclCommInitRootInfo on both hosts joins the store the root
    info names; AllReduce, AllGather and a HcclBatchSendRecv ring whose every rank sends first give the golden
    values."""
    path = str(tmp_path / "root_info")
    size = str(len(placement))
    procs = _start(two_hosts, tasks.HCCL_ROOT_INFO, placement, lambda r: [size, path], _env())
    assert _finish(procs) == [{"wrong": 0}] * len(placement)


def _rank_table(hosts: emulated_hosts.EmulatedHosts, **overrides) -> dict:
    table = {"version": "1.0", "server_count": "2", "status": "completed", "server_list": [
        {"server_id": hosts.names[s], "host_ip": hosts.addresses[s],
         "device": [{"device_id": str(d), "device_ip": f"192.0.2.{2 * s + d + 1}", "rank_id": str(2 * s + d)}
                    for d in range(2)]} for s in range(2)]}
    table.update(overrides)
    return table


def test_hccl_rank_table_of_two_servers(two_hosts, tmp_path):
    """HcclCommInitClusterInfo on a rank table listing two servers: the ranks meet on the first server's host_ip
    (ATB_OPS_RANK_TABLE_PORT), AllReduce gives the golden values."""
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps(_rank_table(two_hosts)))
    procs = _start(two_hosts, tasks.HCCL_RANK_TABLE, [0, 0, 1, 1], lambda r: [str(table)], _env())
    assert _finish(procs) == [{"wrong": 0}] * 4


@pytest.mark.parametrize("fault,expected", [
    ("duplicate", "rank_id 1 is listed twice"),
    ("count", "server_count 3 but its server_list lists 2"),
    ("missing", "rank 3 is not in rank table"),
    ("range", "rank_id 7"),
])
def test_rank_table_faults_are_named_at_once(two_hosts, tmp_path, fault, expected):
    """A rank table with a duplicate rank_id, a wrong server_count, rank 3's device missing, or an out-of-range
    rank_id: HcclCommInitClusterInfo fails at once on rank 3, which reads it, naming the fault."""
    table = _rank_table(two_hosts)
    devices = table["server_list"][1]["device"]
    if fault == "duplicate":
        devices[0]["rank_id"] = "1"
    elif fault == "count":
        table["server_count"] = "3"
    elif fault == "missing":
        devices.pop()
    else:
        devices[1]["rank_id"] = "7"
    path = tmp_path / "bad_table.json"
    path.write_text(json.dumps(table))
    began = time.monotonic()
    program = textwrap.dedent(tasks.HCCL_RANK_TABLE)
    rank3 = two_hosts.popen(1, [sys.executable, "-c", program, "3", str(path)], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    (report,) = _finish([rank3])
    assert expected in report.get("error", ""), report
    assert time.monotonic() - began < 30


def test_rank_table_whose_first_server_serves_no_store_fails_within_the_timeout(two_hosts, tmp_path):
    """Rank 3 alone, on h1, with a two-server table: nothing serves the store at h0's host_ip. HcclCommInitClusterInfo
    fails within ATB_OPS_TIMEOUT (4 s) naming the address it could not reach (torch's client alone took twice the
    timeout and more, printing C++ frames)."""
    path = tmp_path / "rank_table.json"
    path.write_text(json.dumps(_rank_table(two_hosts)))
    began = time.monotonic()
    program = textwrap.dedent(tasks.HCCL_RANK_TABLE)
    rank3 = two_hosts.popen(1, [sys.executable, "-c", program, "3", str(path)], env=clean_env(ATB_OPS_TIMEOUT="4"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    (report,) = _finish([rank3])
    elapsed = time.monotonic() - began
    address = f"{two_hosts.addresses[0]}:61001"
    assert "ERROR_COMM_TIMEOUT" in report.get("error", "") and address in report["error"], report
    assert "ATB_OPS_TIMEOUT=4 s" in report["error"], report
    assert elapsed < 9, elapsed  # the 4 s and the interpreter's start-up


def test_atb_params_with_a_rank_table_span_hosts(two_hosts, tmp_path):
    """ATB params with a rankTableFile listing two servers and nothing else (no torch.distributed): the ranks meet
    on the table's store and every operator gives the golden values."""
    table = tmp_path / "rank_table.json"
    table.write_text(json.dumps(_rank_table(two_hosts)))
    env = _env(INIT="0", RANK_TABLE=str(table))
    procs = _start(two_hosts, tasks.ATB_AFTER_INIT, [0, 0, 1, 1], lambda r: ["4", "hccl"], env)
    for report in _finish(procs):
        assert report.get("wrong") == 0, report


# ------------------------------------------------------------------------------------- torch.distributed


@pytest.mark.parametrize(
    ("placement", "comm"),
    [([0, 0, 1, 1], "shm+gloo"), ([0, 1], "gloo"), ([0, 0, 1], "gloo")],
    ids=["2x2", "2x1", "2+1"],
)
def test_atb_ops_process_group_spans_hosts(two_hosts, placement, comm):
    """init_process_group("atb_ops") across hosts: all_reduce (sum, max; small and sharded), all_gather(_into_tensor),
    reduce_scatter_tensor, broadcast from every root, all_to_all_single with uneven splits, batch_isend_irecv and
    send/recv give the goldens, through atb_ops' own communicator (two levels where the hosts hold the same number
    of ranks, else one gloo group), as ATB's operators do. A batch_isend_irecv ring whose last receive expects 5
    elements where 4 come: the two ranks of that transfer raise naming the sizes at once, the others complete with
    their data (none waits out the timeout), and the group stays usable."""
    size = len(placement)
    procs = _start(two_hosts, tasks.C10D_ATB_OPS, placement, lambda r: [str(size)], _env())
    for rank, report in enumerate(_finish(procs)):
        batch = "expected 5 elements" if rank >= size - 2 else "done"
        assert report == {"wrong": 0, "type": "C10dBackend", "comm": comm, "batch": batch, "fast": True}, report


def _ddp_golden() -> list[float]:
    """One SGD step of the same model on the 4 ranks' data: the gradient is the mean of the ranks' gradients."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 3)
    grads = None
    for rank in range(4):
        model.zero_grad()
        g = torch.Generator().manual_seed(100 + rank)
        x, y = torch.randn(16, 8, generator=g), torch.randn(16, 3, generator=g)
        torch.nn.functional.mse_loss(model(x), y).backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        grads = flat if grads is None else grads + flat
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return (params - 0.1 * grads / 4).tolist()


def test_torchrun_two_nodes_ddp_step(two_hosts, tmp_path):
    """torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d on the two hosts: a DDP step on backend "atb_ops"
    equals the single-process golden."""
    backend = "atb_ops"
    script = tmp_path / "ddp_step.py"
    script.write_text(tasks.DDP_STEP)
    result = tmp_path / f"params_{backend}.json"
    env = clean_env(ATB_OPS_TIMEOUT="60", BACKEND=backend, RESULT=str(result))
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", f"h0:{PORT}", "--rdzv-id", f"ddp-{backend}", str(script)]
    nodes = [two_hosts.popen(h, argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
             for h in range(2)]
    for p in nodes:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-4000:]
    got = json.loads(result.read_text())
    assert torch.allclose(torch.tensor(got), torch.tensor(_ddp_golden()), atol=1e-6), (got, _ddp_golden())


def test_torchrun_two_nodes_atb_operators_without_init(two_hosts, tmp_path):
    """torchrun --nnodes 2 --nproc-per-node 2, a script of ATB operators that never calls init_process_group: the
    ranks meet on torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE) and span the hosts in two levels; every
    operator gives the golden values on all four ranks, and no default group was made behind the script's back."""
    script = tmp_path / "atb_ops_no_init.py"
    # Each worker reports into a file of its own: two workers' lines on torchrun's one stdout can run together.
    script.write_text(
        "import os, sys\n"
        "sys.argv = [sys.argv[0], os.environ['RANK'], os.environ['WORLD_SIZE'], 'hccl']\n"
        "sys.stdout = open(os.path.join(os.environ['REPORTS'], os.environ['RANK']), 'w', buffering=1)\n"
        + textwrap.dedent(tasks.ATB_AFTER_INIT)
        + "import torch.distributed as dist\nprint('default group made:', dist.is_initialized())\n")
    env = clean_env(ATB_OPS_TIMEOUT="60", INIT="0", REPORTS=str(tmp_path))
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", f"h0:{PORT}", "--rdzv-id", "atb-no-init", str(script)]
    nodes = [two_hosts.popen(h, argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
             for h in range(2)]
    for p in nodes:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-4000:]
    reports, made = [], []
    for rank in range(4):
        lines = (tmp_path / str(rank)).read_text().splitlines()
        reports += [json.loads(line) for line in lines if line.startswith("{")]
        made += [line for line in lines if line.startswith("default group made")]
    assert len(reports) == 4, reports
    for report in reports:
        assert report.get("wrong") == 0 and report["backends"] == ["shm+gloo"], report
    assert made == ["default group made: False"] * 4, made


# ------------------------------------------------------------------------------------------------ faults


@pytest.mark.parametrize(("placement", "fresh"), [([0, 1], ""), ([0, 0, 1, 1], ""), ([0, 0, 1, 1], "fresh")],
                         ids=["2x1", "2x2", "2x2-new-operator-per-call"])
def test_lost_host_is_named_and_a_new_communicator_works_when_it_is_back(tmp_path, placement, fresh):
    """A loop of AllReduce on 2 hosts x 1 rank and 2 x 2 (two levels); h1's link goes down: every rank raises within
    ATB_OPS_TIMEOUT, those of h0 naming a rank they lost on h1 by its number in the communicator (never a rank of
    their own host, which waited with them); the failed communicator leaves the cache, and once the link is back a
    new operation works (every rank). With a new operator per call, each finds the cached communicator: on h1 that
    lookup asked the store on h0 whether a peer had given up, and waited out the store's 120 s."""
    flag = str(tmp_path / "link")
    size = len(placement)
    on_h1 = [r for r, h in enumerate(placement) if h == 1]
    with emulated_hosts.EmulatedHosts(2) as hosts:
        env = clean_env(ATB_OPS_TIMEOUT="8", MASTER_ADDR="h0", MASTER_PORT=PORT)
        procs = _start(hosts, tasks.LOOP_UNTIL_LOST, placement, lambda r: [str(size), flag, "1024", "atb", fresh], env)
        for p in procs:
            assert json.loads(p.stdout.readline()) == {"stage": "looping"}
        time.sleep(1.0)
        Path(flag + ".down").touch()
        hosts.set_link(1, False)
        for r in range(size - len(on_h1)):
            lost = json.loads(procs[r].stdout.readline())
            assert lost["stage"] == "lost" and lost["seconds"] < 9.5, (r, lost)  # ATB_OPS_TIMEOUT (8 s) + the call
            assert "ERROR_COMM_TIMEOUT" in lost["error"] or "ERROR_COMM_PEER_DIED" in lost["error"], (r, lost)
            assert any(f"rank {h1} on 'h1'" in lost["error"] for h1 in on_h1), (r, lost)
        for r in on_h1:  # h1's ranks lost h0 the same way, the link still down
            other = json.loads(procs[r].stdout.readline())
            assert other["stage"] == "lost" and other["error"] and other["seconds"] < 9.5, (r, other)
        hosts.set_link(1, True)
        Path(flag + ".up").touch()
        reports = _finish(procs, 120)
        assert reports == [{"wrong": 0}] * size


def test_lost_host_is_named_by_an_atb_ops_process_group(tmp_path):
    """The same on torch.distributed's all_reduce of init_process_group("atb_ops") (group timeout 120 s,
    ATB_OPS_TIMEOUT 8 s): rank 0 raises DistBackendError within ATB_OPS_TIMEOUT naming rank 1 on 'h1'; once the
    link is back a new "atb_ops" group works on both ranks."""
    flag = str(tmp_path / "link")
    with emulated_hosts.EmulatedHosts(2) as hosts:
        env = clean_env(ATB_OPS_TIMEOUT="8", MASTER_ADDR="h0", MASTER_PORT=PORT)
        procs = _start(hosts, tasks.LOOP_UNTIL_LOST, [0, 1], lambda r: ["2", flag, "1024", "c10d"], env)
        for p in procs:
            assert json.loads(p.stdout.readline()) == {"stage": "looping"}
        time.sleep(1.0)
        Path(flag + ".down").touch()
        hosts.set_link(1, False)
        lost = json.loads(procs[0].stdout.readline())
        assert lost["stage"] == "lost" and lost["seconds"] < 9.5, lost  # within ATB_OPS_TIMEOUT (8 s) + the call
        assert lost["error"].startswith("DistBackendError:"), lost
        assert "ERROR_COMM_TIMEOUT" in lost["error"] or "ERROR_COMM_PEER_DIED" in lost["error"], lost
        assert "rank 1 on 'h1'" in lost["error"], lost
        hosts.set_link(1, True)
        other = json.loads(procs[1].stdout.readline())
        assert other["stage"] == "lost" and other["error"].startswith("DistBackendError:"), other
        Path(flag + ".up").touch()
        assert _finish(procs, 120) == [{"wrong": 0}] * 2


@pytest.mark.parametrize("elements", [1024, 4_000_000], ids=["small", "sharded"])
def test_rank_killed_on_the_other_host_is_named(tmp_path, elements):
    """The same loop on 2 hosts x 2 ranks; a rank on h1 is killed (SIGKILL): every survivor raises within
    ATB_OPS_TIMEOUT naming what it lost: the ranks of the other host from h0, the dead rank and its pid on h1. An h0
    rank whose part between hosts had finished waits inside h0 for the other h0 rank, whose part lost h1: that rank
    passes its failure on, so both name h1. Sharded calls (16 MiB) spend most of their time between hosts, where the
    kill then often lands (2 of 6 probe runs took that path: "rank 1 gave up on this communicator")."""
    flag = str(tmp_path / "kill")
    with emulated_hosts.EmulatedHosts(2) as hosts:
        env = clean_env(ATB_OPS_TIMEOUT="8", MASTER_ADDR="h0", MASTER_PORT=PORT)
        procs = _start(hosts, tasks.LOOP_UNTIL_LOST, [0, 0, 1, 1], lambda r: ["4", flag, str(elements)], env)
        for p in procs:
            assert json.loads(p.stdout.readline()) == {"stage": "looping"}
        time.sleep(1.0)
        Path(flag + ".down").touch()
        procs[3].kill()
        for r in (0, 1, 2):
            lost = json.loads(procs[r].stdout.readline())
            assert lost["stage"] == "lost" and lost["seconds"] < 9.5, (r, lost)  # ATB_OPS_TIMEOUT (8 s) + the call
            assert "ERROR_COMM_TIMEOUT" in lost["error"] or "ERROR_COMM_PEER_DIED" in lost["error"], (r, lost)
            if r < 2:  # on h0: the lost peer is on the other host
                assert "on 'h1'" in lost["error"], (r, lost)
            else:  # on h1 itself: the dead process is named by its pid
                assert "rank 3" in lost["error"], (r, lost)
        for p in procs:
            p.kill()
