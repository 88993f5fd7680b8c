"""`python -m atb_ops bench`: size parsing, traffic patterns, the self-checking payload, the table and its
JSON. No timing is asserted; the runs use a few iterations of small sizes."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

from atb_ops import emulated_hosts
from atb_ops.bench import report, workload


def test_parse_sizes():
    assert workload.parse_size("4096") == 4096
    assert workload.parse_size("1K") == workload.parse_size("1KiB") == workload.parse_size("1k") == 1024
    assert workload.parse_size("64M") == 64 << 20 and workload.parse_size("1G") == 1 << 30
    assert workload.parse_sizes("1K:256M") == [1024 << (2 * i) for i in range(10)]
    assert workload.parse_sizes("1M:8M:2,3") == [1 << 20, 2 << 20, 4 << 20, 8 << 20, 3]
    for bad in ("", "1X", "-1", "0", "4M:1M", "1K:4K:1"):
        with pytest.raises(ValueError):
            workload.parse_sizes(bad)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_patterns(n):
    uniform = workload.count_matrix(n, 1000, "uniform")
    assert all(c == 1000 // n for row in uniform for c in row)
    skewed = workload.count_matrix(n, 1000, "skewed", spread=8)
    received = [sum(skewed[i][j] for i in range(n)) for j in range(n)]
    assert received == sorted(received, reverse=True)  # rank 0 is the hot one
    if n > 1:
        assert 900 <= received[0] <= 1000 and received[0] >= 7 * received[-1]
    assert workload.busiest_bytes(skewed, 4) == 4 * max(max(received), max(sum(r) for r in skewed))
    lay = workload.rank_layout(skewed, n - 1)
    assert lay.sdispls == [sum(lay.send_counts[:j]) for j in range(n)]
    assert lay.recv_counts == [skewed[i][n - 1] for i in range(n)]


@pytest.mark.parametrize("dtype_name", list(workload.DTYPES))
def test_payload_checks_itself(dtype_name):
    """A faithful exchange has 0 wrong; a wrong sender, a shifted region or a sentinel left are caught."""
    dtype = workload.DTYPES[dtype_name]
    matrix = workload.count_matrix(3, 3000, "skewed")
    seq = workload.sequence_for(matrix, dtype)
    lays = [workload.rank_layout(matrix, r) for r in range(3)]
    sends = []
    for r, lay in enumerate(lays):
        x = torch.empty(lay.send_numel, dtype=dtype)
        workload.fill_send(x, lay, r, 5, seq)
        sends.append(x)
    lay = lays[1]
    out = torch.empty(lay.recv_numel, dtype=dtype)
    workload.poison(out)
    assert workload.count_wrong(out, lay, 1, 5, seq) == lay.recv_numel
    for src in range(3):
        c, d = lay.recv_counts[src], lay.rdispls[src]
        out[d : d + c] = sends[src][lays[src].sdispls[1] : lays[src].sdispls[1] + c]
    assert workload.count_wrong(out, lay, 1, 5, seq) == 0
    assert workload.count_wrong(out, lay, 1, 6, seq) > 0  # another seed's data
    shifted = out.clone()
    shifted[1:] = out[:-1].clone()
    assert workload.count_wrong(shifted, lay, 1, 5, seq) > lay.recv_numel // 3


def test_report_figures_and_row():
    f = report.figures({"time_s": 1e-3, "wrong": 0}, 4 << 20, 3 / 4)
    assert f["time_us"] == pytest.approx(1000.0) and f["algbw"] == pytest.approx(4.194304)
    assert f["busbw"] == pytest.approx(4.194304 * 3 / 4)
    assert report.figures(None, 1, 2) is None and report.figures({"time_s": float("nan"), "wrong": 0}, 1, 2) is None
    gloo = report.figures({"time_s": 2e-3, "wrong": 3}, 4 << 20, 3 / 4)
    shared = report.figures({"time_s": 0.5e-3, "wrong": 0}, 4 << 20, 3 / 4)
    row = {"bytes": 4 << 20, "count": 1 << 20, "figures": {"atb": f, "gloo": gloo, "shared": shared}}
    columns = [report.Column("shared", "shared", "vs gloo", "self", "gloo"),
               report.Column("gloo", "gloo", "speedup", "atb", "self")]
    line = report.row_line(row, "float32", columns)
    assert line.split()[:3] == [str(4 << 20), str(1 << 20), "float32"]
    assert line.split()[-1] == "2.00x" and line.split()[11] == "4.00x"
    assert "vs gloo" in report.header(["t"], "atb", columns)


def test_report_rounds_show_median_best_and_spread():
    f = report.figures({"time_s": 2e-3, "best_s": 1e-3, "spread": 1.5, "rounds_s": [1e-3, 2e-3, 4e-3], "wrong": 0},
                       1 << 20, 1 / 2)
    assert f["time_us"] == pytest.approx(2000.0) and f["best_us"] == pytest.approx(1000.0)
    mpi = report.figures({"time_s": 3e-3, "best_s": 3e-3, "spread": 0.0, "rounds_s": [3e-3] * 3, "wrong": 0},
                         1 << 20, 1 / 2)
    columns = [report.Column("mpi", "mpi", "speedup", "atb", "self")]
    line = report.row_line({"bytes": 1 << 20, "count": 1 << 18, "figures": {"atb": f, "mpi": mpi}}, "float32",
                           columns, rounds=True)
    words = line.split()
    assert words[3:6] == ["2000.0", "1000.0", "150.0%"] and words[-1] == "1.50x"  # ratio of the medians
    head = report.header(["t"], "atb", columns, rounds=True).splitlines()[-1]
    assert head.split().count("best(us)") == 2 and len(head) >= len(line) - 2


def test_pages_are_the_same_for_every_library():
    from atb_ops.bench import pages

    assert pages.env_for("huge") == {"ATB_OPS_HUGEPAGES": "1"} and pages.env_for("small") == {"ATB_OPS_HUGEPAGES": "0"}
    assert "THP mode" in pages.describe("huge") and "ATB_OPS_HUGEPAGES=0" in pages.describe("small")
    small = torch.zeros(1024)
    assert pages.give_same_pages("huge", [small]) == 0 and pages.give_same_pages("small", [torch.zeros(4 << 20)]) == 0
    with pytest.raises(ValueError, match="pages must be one of"):
        pages.give_same_pages("giant", [])
    # 16 MiB touched: its whole 2 MiB pages are collapsed where the kernel has THP and free huge pages (advice:
    # the kernel may refuse); what it reports collapsed must show in the mapping's AnonHugePages.
    big = torch.ones(4 << 20)
    got = pages.give_same_pages("huge", [big])
    assert got % (2 << 20) == 0 and got <= 16 << 20, got
    if got:
        assert _anon_huge_bytes(big.data_ptr(), big.nbytes) >= got
    assert torch.equal(big, torch.ones(4 << 20))  # the data stays


def _anon_huge_bytes(address: int, nbytes: int) -> int:
    """AnonHugePages of the mappings in /proc/self/smaps that overlap [address, address + nbytes) (the advice
    splits the tensor's mapping at huge-page boundaries)."""
    total, inside = 0, False
    with open(f"/proc/{os.getpid()}/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo < address + nbytes and address < hi
            elif inside and head == "AnonHugePages:":
                total += int(line.split()[1]) * 1024
    return total


def _run_bench(args: list[str], tmp_path) -> tuple[str, dict]:
    out_json = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "atb_ops", "bench", *args, "--json", str(out_json)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(out_json.read_text())


HAVE_MPI = shutil.which("mpirun") is not None and importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="no Open MPI here (mpirun + mpi4py: scripts/install_bench_deps.sh)")


def test_bench_table_json_and_comparisons(tmp_path):
    """2 ranks, shm beside gloo: nccl-tests columns, 0 wrong."""
    args = ["--world-size", "2", "--sizes", "1K,200000", "--iters", "3", "--warmup", "1", "--no-mpi"]
    stdout, doc = _run_bench(args, tmp_path)
    header = next(line for line in stdout.splitlines() if "size" in line and "count" in line)
    for column in ("size", "count", "type", "time(us)", "algbw", "busbw", "#wrong", "speedup"):
        assert column in header
    assert "# Avg bus bandwidth" in stdout and "memcpy limit" in stdout
    rows = [line.split() for line in stdout.splitlines() if line and not line.startswith("#")]
    assert [r[0] for r in rows] == ["1024", "200000"] and all(r[2] == "float32" for r in rows)
    assert [r["bytes"] for r in doc["rows"]] == [1024, 200000]
    for row in doc["rows"]:
        assert set(row["figures"]) == {"atb", "torchscript", "shared", "gloo"}, row["figures"]
        assert row["figures"]["atb"]["wrong"] == 0 and row["figures"]["gloo"]["wrong"] == 0
        assert row["figures"]["shared"]["wrong"] == 0 and row["figures"]["torchscript"]["wrong"] == 0
        assert row["figures"]["atb"]["busbw"] == pytest.approx(row["figures"]["atb"]["algbw"] / 2)


def test_bench_plot(tmp_path):
    """--plot draws the table (matplotlib is a development requirement, so this always runs)."""
    _run_bench(["-n", "2", "-s", "1K,64K", "-i", "2", "-w", "0", "--no-mpi", "--no-gloo",
                "--plot", str(tmp_path / "bench.png")], tmp_path)
    assert (tmp_path / "bench.png").stat().st_size > 1000


@needs_mpi
@pytest.mark.parametrize("op", ["alltoallv", "allreduce"])
def test_bench_mpi_column(tmp_path, op):
    """Open MPI's MPI_Alltoallv / MPI_Allreduce beside atb_ops, its results checked like every column."""
    stdout, doc = _run_bench(["--op", op, "-n", "2", "-s", "1K,200000", "-i", "3", "-w", "1", "--no-gloo"], tmp_path)
    for row in doc["rows"]:
        assert row["figures"]["mpi"]["wrong"] == 0, row["figures"]


def test_bench_skewed_three_ranks_rounds(tmp_path):
    stdout, doc = _run_bench(
        ["-n", "3", "-s", "4K,300K", "-p", "skewed", "--spread", "8", "-d", "bfloat16", "-i", "2", "-w", "0",
         "--rounds", "2", "--no-mpi", "--no-gloo"],
        tmp_path,
    )
    assert "pattern skewed (spread 8)" in stdout and "median of 2 rounds" in stdout
    header = next(line for line in stdout.splitlines() if "size" in line and "count" in line)
    assert "best(us)" in header and "spread" in header
    for row in doc["rows"]:
        atb = row["figures"]["atb"]
        low, high = sorted(atb["rounds_us"])
        assert atb["time_us"] == pytest.approx((low + high) / 2) and atb["best_us"] == pytest.approx(low)
        assert atb["spread"] == pytest.approx((high - low) / atb["time_us"])
    assert [r["figures"]["atb"]["wrong"] for r in doc["rows"]] == [0, 0]
    assert [r["figures"]["shared"]["wrong"] for r in doc["rows"]] == [0, 0]
    assert [r["figures"]["torchscript"]["wrong"] for r in doc["rows"]] == [0, 0]
    assert set(doc["rows"][0]["figures"]) == {"atb", "torchscript", "shared"}


OPERATIONS = {"allreduce": "AllReduceOperation", "reduce_scatter": "ReduceScatterOperation",
              "allgather": "AllGatherOperation", "broadcast": "BroadcastOperation"}
BUS_FACTOR_AT_2 = {"allreduce": 1.0, "reduce_scatter": 0.5, "allgather": 0.5, "broadcast": 1.0}  # nccl-tests


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_bench_collectives_with_the_framework_api_column(tmp_path, op):
    """--op allreduce / reduce_scatter / allgather / broadcast: every column checked against the
    independent expected values."""
    args = ["--op", op, "--api", "distributed", "-n", "2", "-s", "1K,300K", "-i", "3", "-w", "1", "--no-mpi"]
    stdout, doc = _run_bench(args, tmp_path)
    expected_columns = {"atb", "torchscript", "shared", "dist", "gloo"}
    assert "x exec" in stdout and OPERATIONS[op] in stdout
    for row in doc["rows"]:
        assert set(row["figures"]) == expected_columns, row["figures"]
        assert all(f["wrong"] == 0 for f in row["figures"].values()), row["figures"]
        assert row["figures"]["atb"]["busbw"] == pytest.approx(row["figures"]["atb"]["algbw"] * BUS_FACTOR_AT_2[op])
    assert [r["bytes"] for r in doc["rows"]] == [1024, 300 * 1024]


def test_bench_alltoallv_framework_api_columns(tmp_path):
    """--api distributed on the alltoallv bench: all_to_all_v, alltoall_single and global_scatter (2 experts
    per rank, put back in rank order) each checked element by element, on a skewed 3-rank layout."""
    args = ["--api", "distributed", "-n", "3", "--pattern", "skewed", "-s", "1K,300K", "-i", "3", "-w", "1",
            "--no-mpi"]
    stdout, doc = _run_bench(args, tmp_path)
    assert "atb_ops.distributed.global_scatter, 2 experts/rank" in stdout
    for row in doc["rows"]:
        assert set(row["figures"]) == {"atb", "torchscript", "shared", "dist", "dist_single", "dist_scatter", "gloo"}
        assert all(f["wrong"] == 0 for f in row["figures"].values()), row["figures"]


def test_bench_expected_values_are_independent():
    from atb_ops.bench import collectives

    for dtype in (torch.int8, torch.bfloat16, torch.uint8):
        xs = [collectives.values(40, r, dtype) for r in range(4)]
        want = torch.stack([x.to(torch.float64) for x in xs]).sum(0)
        assert torch.equal(collectives.expected("allreduce", 40, 1, 4, dtype).to(torch.float64), want)
        assert torch.equal(collectives.expected("reduce_scatter", 40, 2, 4, dtype).to(torch.float64), want[20:30])
        assert torch.equal(collectives.expected("allgather", 40, 3, 4, dtype), torch.cat(xs))
        assert torch.equal(collectives.expected("broadcast", 40, 3, 4, dtype), xs[0])
    assert collectives.shapes("allgather", 4096, 4, torch.float32) == (256, 1024)
    assert collectives.shapes("reduce_scatter", 4096, 4, torch.float32) == (1024, 256)


def test_bench_rejects_what_a_reduction_cannot_do(tmp_path):
    for extra, message in ((["--dtype", "bool"], "needs a dtype with a sum"),
                           (["--pattern", "skewed"], "applies to --op alltoallv only")):
        proc = subprocess.run([sys.executable, "-m", "atb_ops", "bench", "--op", "allreduce", *extra],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr


@pytest.mark.parametrize("op", ["alltoallv", "quant_allreduce", "linear_parallel"])
def test_every_bench_checks_repeats_and_output_files_before_running(tmp_path, capsys, op):
    """--rounds 0, a negative --iters and a --json in a folder that does not exist are argparse errors (exit 2) of
    every bench, before any rank starts (--rounds 0 was a traceback from the ranks of quant_allreduce, a negative
    --iters ran, and an unwritable --json failed only after the whole run)."""
    from atb_ops.bench import cli

    for extra, message in ((["--rounds", "0"], "--rounds >= 1"), (["--iters", "-1"], "--iters must be >="),
                           (["--json", str(tmp_path / "missing" / "x.json")], "does not exist or is not writable")):
        with pytest.raises(SystemExit) as exited:
            cli.main(["--op", op, "--sizes", "1K", *extra])
        assert exited.value.code == 2, extra
        assert message in capsys.readouterr().err, extra


@pytest.mark.parametrize(("argv", "message"), [
    (["--sizes", "1K", "--spread", "0.5"], "--spread must be >= 1"),
    (["--sizes", "1K", "--spread", "nan", "-n", "3", "--pattern", "skewed"], "--spread must be >= 1"),
    (["--sizes", "1K", "--plot", "p.txt"], "--plot p.txt: name a png"),
    (["--sizes", "99999999999G"], "above the largest the bench takes"),
    (["--sizes", "1K,3"], "--sizes 3 B: less than one float32 element (4 B)"),
    (["--sizes", "512G"], "more than this machine's"),
    (["--op", "quant_allreduce", "--sizes", "1K", "--block-size", "0"], "--block-size must be >= 1, got 0"),
    (["--op", "quant_allreduce", "--sizes", "3"], "less than one float32 element"),
])
def test_bench_arguments_that_cannot_run_are_argparse_errors(capsys, argv, message):
    """Sizes below one element, beyond memory or beyond 1 TiB, a --spread below 1 or NaN, a plot format matplotlib
    cannot write and a --block-size below 1 are argparse errors (exit 2) before any rank starts (they were empty
    rows, tracebacks from the ranks, or a failure after the whole run)."""
    from atb_ops.bench import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_single_rank_quant_bench_and_hccl_bench_run_on_cpu_ranks(tmp_path):
    """`--op quant_allreduce -n 1` (its gloo fp16 row moves no bytes: the ratio was a ZeroDivisionError) and
    `--backend hccl` off-NPU (its ranks asked for an "npu" device torch does not have) print their tables."""
    for argv in (["--op", "quant_allreduce", "-n", "1", "--sizes", "1K", "--iters", "1", "--rounds", "1"],
                 ["-n", "2", "-b", "hccl", "--sizes", "4K", "--iters", "2", "--no-mpi", "--no-torchscript"]):
        proc = subprocess.run([sys.executable, "-m", "atb_ops", "bench", "--warmup", "0", *argv],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "#wrong" in proc.stdout or "wrong" in proc.stdout, proc.stdout


def test_quant_bench_takes_the_same_size_syntax(tmp_path):
    """`--op quant_allreduce --sizes 64K,128K` (the alltoallv bench's syntax) runs both sizes."""
    out_json = tmp_path / "quant.json"
    proc = subprocess.run(
        [sys.executable, "-m", "atb_ops", "bench", "--op", "quant_allreduce", "--sizes", "64K,128K", "--world-size",
         "2", "--iters", "1", "--rounds", "1", "--warmup", "0", "--json", str(out_json)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted({row["size"] for row in json.loads(out_json.read_text())["rows"]}) == [64 << 10, 128 << 10]
    bad = subprocess.run([sys.executable, "-m", "atb_ops", "bench", "--op", "quant_allreduce", "--sizes", "1M,oops"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "bad size 'oops'" in bad.stderr, bad.stderr


def test_linear_parallel_bench(tmp_path):
    """`--op linear_parallel`: fused vs unfused rows for every size, checked against the float64 golden."""
    out_json = tmp_path / "lp.json"
    proc = subprocess.run(
        [sys.executable, "-m", "atb_ops", "bench", "--op", "linear_parallel", "--sizes", "16K,64K", "--k", "64",
         "--n", "128", "--dtype", "float16", "--iters", "2", "--rounds", "1", "--warmup", "0", "--json",
         str(out_json)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out_json.read_text())["rows"]
    assert [(r["size"], r["m"], r["wrong"]) for r in rows] == [(16 << 10, 64, 0), (64 << 10, 256, 0)]
    assert set(rows[0]["times_s"]) == {"fused", "unfused", "unfused_gloo"}
    assert "speedup" in proc.stdout and "#wrong" in proc.stdout


@pytest.mark.parametrize("op", ["alltoallv", "allreduce", "allgather", "broadcast"])
def test_bench_c10d_api(tmp_path, op):
    """--api c10d: torch.distributed's own call on the backend "atb_ops" beside gloo, both checked element by
    element (alltoallv: a skewed 3-rank layout through all_to_all_single's split sizes; reduce_scatter takes
    allgather's path with another call, and its values are tested in test_c10d_backend)."""
    extra = ["-n", "3", "--pattern", "skewed"] if op == "alltoallv" else ["-n", "2"]
    stdout, doc = _run_bench(["--op", op, "--api", "c10d", *extra, "-s", "1K,64K", "-i", "2", "-w", "0", "--no-mpi"],
                             tmp_path)
    assert "on backend 'atb_ops'" in stdout and "atb_ops c10d backend" in stdout
    assert "on backend 'fake' (does nothing)" in stdout
    above = re.search(r"# atb_ops above floor  : (.*) us per call", stdout)
    assert above and len(re.findall(r"[+-]\d+\.\d", above.group(1))) == len(doc["rows"]) == 2, stdout
    for row in doc["rows"]:
        assert set(row["figures"]) == {"atb", "floor", "gloo"}, row["figures"]
        assert all(f["wrong"] == 0 for f in row["figures"].values()), row["figures"]
        assert row["figures"]["floor"]["time_us"] > 0


_hosts_why = emulated_hosts.available(shaping=True)


@pytest.mark.skipif(_hosts_why is not None, reason=f"emulated hosts unavailable: {_hosts_why}")
@pytest.mark.parametrize("op", ["allreduce", "alltoallv"])
def test_bench_across_emulated_hosts(tmp_path, op):
    """--hosts 2 --link-rate: 4 ranks on 2 shaped emulated hosts, atb_ops (backend auto: two levels) beside gloo
    (and Open MPI where it is installed), 0 wrong; the footer and the JSON give each size's link limit (bytes the
    busiest host sends / the rate), here 1 MiB at 1 Gbit/s (125e6 B/s): 2 x (2-1)/2 x 1 MiB for allreduce,
    L x (H-1)/H x 1 MiB for alltoallv; the raw exchange of those bytes (gloo isend + recv between the hosts, both
    ways) is a column of its own, its data checked, never faster than the shaped link allows."""
    args = ["--op", op, "--hosts", "2", "--world-size", "4", "--link-rate", "1gbit", "--sizes", "64K,1M", "--iters",
            "2", "--warmup", "1", "--no-torchscript", "--no-shared"]
    stdout, doc = _run_bench(args, tmp_path)
    assert "2 emulated hosts x 2 ranks, host by host; link 1gbit" in stdout
    assert "# link limit" in stdout
    for row in doc["rows"]:
        assert row["figures"]["atb"]["wrong"] == 0 and row["figures"]["gloo"]["wrong"] == 0, row
        if HAVE_MPI:  # Open MPI's ranks across the same hosts (mpirun in h0, an agent that enters h1)
            assert row["figures"]["mpi"]["wrong"] == 0, row
    # allreduce: 2(H-1)/H x size; alltoallv: L(H-1)/H x size; both 1 x 1 MiB with H = L = 2
    limit = doc["rows"][1]["link_limit_us"]
    assert limit == pytest.approx(2**20 / 125e6 * 1e6)
    # The raw exchange moves exactly those bytes through the shaped link (every word checked), so it cannot beat
    # the limit by more than tbf's bucket (128 KiB at 1 Gbit/s) lets through
    assert "raw exchange (gloo isend + recv)" in stdout and "x raw" in stdout
    raw = doc["rows"][1]["figures"]["link"]
    assert raw["wrong"] == 0 and raw["time_us"] >= 0.8 * limit, raw


def test_raw_exchange_pairs_ranks_across_two_hosts():
    """Each rank's partner is its local index on the other host, and the ranks of a host send their partners the
    link limit's bytes between them (allreduce: 2(H-1)/H x size per host; alltoallv: L(H-1)/H x size)."""
    from atb_ops.bench import raw_link

    assert [raw_link.partner(r, 2) for r in range(4)] == [2, 3, 0, 1]
    assert [raw_link.partner(r, 1) for r in range(2)] == [1, 0]
    assert raw_link.share_bytes("alltoallv", 1 << 20, 2) == 1 << 19  # 2 x 1/2 x 1 MiB per host, over 2 ranks
    assert raw_link.share_bytes("allreduce", 1 << 20, 1) == 1 << 20
    assert raw_link.share_bytes("alltoallv", 6, 2) == 4  # whole words, rounded up


def test_bench_hosts_arguments_are_checked():
    """--link-rate needs --hosts; --hosts must divide the ranks; both before anything starts."""
    for extra, message in ((["--link-rate", "1gbit"], "give --hosts too"),
                           (["--hosts", "3", "--world-size", "4"], "divide --world-size")):
        proc = subprocess.run([sys.executable, "-m", "atb_ops", "bench", *extra], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
