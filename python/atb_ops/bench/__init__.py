"""`python -m atb_ops bench`: alltoallv bandwidth and latency, in nccl-tests form, beside gloo and Open MPI.

Usage::

    python -m atb_ops bench                                 # 2 CPU ranks, shm, float32, 1 KiB .. 256 MiB (x4)
    python -m atb_ops bench --world-size 4 --sizes 1K,1M,64M
    python -m atb_ops bench --sizes 1M:64M:2 --dtype bfloat16 --pattern skewed --spread 8
    python -m atb_ops bench --json out.json --plot out.png  # machine-readable rows, bandwidth plot
    python -m atb_ops bench --no-mpi --no-gloo --iters 1000 # atb_ops alone, fixed iteration count
    python -m atb_ops bench --api c10d --op allreduce       # torch.distributed on backend "atb_ops" vs gloo

What is measured. ``--world-size`` ranks are spawned on this host (each with one intra-op thread,
pinned one per CPU when they fit, as ``mpirun`` does: ``--bind``). Per size every rank builds the same
count layout (see traffic patterns), fills its send buffer from ``--seed``, and then

1. **atb_ops**: ``AllToAllVV2Operation`` with ``backend`` = ``--backend``, counts given once through
   ``set_varaintpack_param``, called as ``execute_out([x, tensorForInferShape], [out])`` on an
   ``atb_ops.Operation`` (OperationTorch's methods through pybind11) with the same tensors on every call (no
   allocation per call; the small-message rows are its latency, Python call included);
2. **OperationTorch** (``--no-torchscript`` skips): the same call on
   ``torch.classes.OperationTorch.OperationTorch``, the TorchScript class ATB's scripts construct (the same
   operator object; TorchScript's dispatch adds about 2 us per call);
3. **atb_ops, shm_empty buffers** (CPU backends; ``--no-shared`` skips): the same call with ``x`` and
   ``out`` allocated by ``atb_ops.shm_empty``, the shared-memory arena peers copy from with memcpy;
4. **gloo**: ``torch.distributed.all_to_all_single`` on a gloo group, same counts (``--no-gloo`` skips);
5. **Open MPI**: ``MPI_Alltoallv`` on the same counts, displacements and bytes, in a separate
   ``mpirun`` job of ``atb_ops.bench.mpi`` (mpi4py) that stays up and runs one size per request, so
   the libraries take turns size by size; only where ``mpirun`` and mpi4py exist
   (``scripts/install_bench_deps.sh``; ``--no-mpi`` skips).

``--api c10d`` times torch.distributed's own call instead (``all_to_all_single``, ``all_reduce``, ...) on a
group with backend "atb_ops" (atb_ops.bench.c10d), beside the same call on gloo and Open MPI's.

Each is checked once per size (output pre-filled with a sentinel, every element compared with what its
sender wrote: ``#wrong``), warmed up (``--warmup``), then timed over ``--iters`` back-to-back calls
(default: as many as fit in about 0.25 s, at least 5). ``--rounds R`` repeats every size R times, the
libraries alternating (on a shared machine this keeps a burst of someone else's load from landing on one
library only), and reports each library's median round, its best round and the spread of its rounds
((slowest - fastest) / median).

Every library gets the same memory (``--pages``, atb_ops.bench.pages): by default the buffers each one is
timed on (4 MiB and more) are collapsed onto transparent huge pages exactly as atb_ops collapses its own;
``--pages small`` collapses nobody's. The table's title says which, and the kernel's THP mode.

Columns, as nccl-tests: ``size`` is the bytes the busiest rank receives (or sends, if more) per call,
``count`` the same in elements; ``time`` is the mean time per call, max over ranks; ``algbw = size /
time``; ``busbw = algbw * (n-1)/n`` (the share that crosses between ranks); ``speedup`` is the other
library's time over atb_ops' time (> 1: atb_ops is faster); the shm_empty column's ``vs MPI`` is Open
MPI's time over its own. The footer gives each library's average
bus bandwidth and the single-thread memcpy bandwidth measured in the same run: a rank must at least
write its whole output once, so memcpy (divided among ranks when ranks outnumber cores) bounds algbw.

Traffic patterns (``--pattern``):

- ``uniform``: every rank sends count/n elements to every rank (nccl-tests' alltoall).
- ``skewed``: a hot-expert MoE step. Destination j receives ``spread ** (-j/(n-1))`` of what rank 0
  receives, split evenly over the senders; rank 0 receives ``size``, rank n-1 ``size/spread``
  (``--spread``, default 4; 1 is uniform).

Displacements are packed in rank order (gloo's all_to_all_single cannot take others).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import queue
import statistics
import sys
import time
import uuid
from typing import Any

import torch

from atb_ops._launch import free_port
from atb_ops.bench import collectives, pages, report, workload
from atb_ops.bench.ranks import BenchConfig

DEFAULT_SIZES = "1K:256M"
SIZE_MEANING = {
    "alltoallv": "bytes of the busiest rank",
    "allreduce": "bytes of a rank's input (= its output)",
    "reduce_scatter": "bytes of a rank's input (it receives 1/n of them reduced)",
    "allgather": "bytes of a rank's output (it sends 1/n of them)",
    "broadcast": "bytes of the buffer",
}
BUS_FORMULA = {"alltoallv": "(n-1)/n", "allreduce": "2(n-1)/n", "reduce_scatter": "(n-1)/n", "allgather": "(n-1)/n",
               "broadcast": "1"}
LABELS_OTHER = {
    "torchscript": "atb_ops {backend}, OperationTorch (TorchScript)",
    "shared": "atb_ops {backend}, shm_empty buffers",
    "dist": "atb_ops.distributed.{dist}",
    "dist_single": "atb_ops.distributed.alltoall_single",
    "dist_scatter": "atb_ops.distributed.global_scatter, 2 experts/rank",
    "floor": "torch's floor: {gloo} on backend 'fake' (does nothing)",
}
# --op -> (ATB operation, atb_ops.distributed function, gloo's call, Open MPI's call)
OP_NAMES = {
    "alltoallv": ("AllToAllVV2Operation", "all_to_all_v", "all_to_all_single", "MPI_Alltoallv"),
    "allreduce": ("AllReduceOperation", "all_reduce", "all_reduce", "MPI_Allreduce"),
    "reduce_scatter": ("ReduceScatterOperation", "reduce_scatter", "reduce_scatter_tensor", "MPI_Reduce_scatter_block"),
    "allgather": ("AllGatherOperation", "all_gather", "all_gather_into_tensor", "MPI_Allgather"),
    "broadcast": ("BroadcastOperation", "broadcast", "broadcast", "MPI_Bcast"),
}
# Open MPI reduces what numpy and MPI both type; it has no float16/bfloat16 arithmetic.
MPI_REDUCIBLE = ("int8", "int16", "int32", "int64", "float32", "float64", "uint8")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class Progress:
    """Progress lines on stderr, once a run has lasted a few seconds (short runs stay quiet)."""

    def __init__(self, quiet_for_s: float = 3.0) -> None:
        self.start = time.monotonic()
        self.quiet_for_s = quiet_for_s

    def __call__(self, what: str) -> None:
        elapsed = time.monotonic() - self.start
        if elapsed >= self.quiet_for_s:
            print(f"# [{elapsed:6.1f} s] {what}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m atb_ops bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="--op quant_allreduce (atb_ops.quant's int8 all-reduce) takes flags of its own: --world-size, --sizes, "
               "--dtype, --out-dtype, --block-size, --warmup, --iters, --rounds, --path auto|shm|group, --thp, --json "
               "(python -m atb_ops bench --op quant_allreduce --help); --op linear_parallel (LinearParallelOperation "
               "against matmul + all-reduce) likewise: --world-size, --backend, --sizes, --k, --n, --dtype, --iters, "
               "--budget, --warmup, --rounds, --no-gloo, --json (python -m atb_ops bench --op linear_parallel --help)")
    p.add_argument("--op", default="alltoallv", choices=[*collectives.OPS, "quant_allreduce", "linear_parallel"],
                   help="the collective: alltoallv (AllToAllVV2Operation, default), allreduce (AllReduceOperation), "
                        "reduce_scatter (ReduceScatterOperation), allgather (AllGatherOperation), broadcast "
                        "(BroadcastOperation, root 0); quant_allreduce: atb_ops.quant's bench; linear_parallel: "
                        "LinearParallelOperation against matmul + all-reduce (atb_ops.bench.linear_parallel)")
    p.add_argument("--api", choices=["atb", "distributed", "c10d"], default="atb",
                   help="distributed: also time the same collective through atb_ops.distributed (a column beside "
                        "execute_out); c10d: time torch.distributed's call on the backend 'atb_ops' instead of "
                        "execute_out")
    p.add_argument("--world-size", "-n", type=int, default=2, help="ranks on this host (default 2)")
    p.add_argument("--backend", "-b", default="shm", choices=["shm", "gloo", "nccl", "hccl", "auto"],
                   help="atb_ops backend under test (default shm)")
    p.add_argument("--sizes", "-s", default=DEFAULT_SIZES,
                   help="bytes per rank: list 1K,1M,64M, range LO:HI (x4) or LO:HI:FACTOR (default 1K:256M)")
    p.add_argument("--dtype", "-d", default="float32", choices=list(workload.DTYPES), help="element type")
    p.add_argument("--pattern", "-p", default="uniform", choices=list(workload.PATTERNS), help="traffic pattern")
    p.add_argument("--spread", type=float, default=4.0,
                   help="skewed: rank 0 receives SPREAD times what rank n-1 receives (default 4)")
    p.add_argument("--seed", type=int, default=0, help="payload seed (default 0)")
    p.add_argument("--iters", "-i", type=int, default=0, help="timed calls per size (default: ~0.25 s worth)")
    p.add_argument("--warmup", "-w", type=int, default=5, help="untimed calls per size (default 5)")
    p.add_argument("--budget", type=float, default=0.25, help="seconds of timed calls per size when --iters is 0")
    p.add_argument("--rounds", "-r", type=int, default=1,
                   help="repeat the whole run, libraries alternating, and report each one's median round, best "
                        "round and spread (default 1)")
    p.add_argument("--pages", choices=list(pages.CHOICES), default="huge",
                   help="the memory every library's buffers get: huge (collapsed onto transparent huge pages as "
                        "atb_ops does its own, default) or small (nobody's collapsed, ATB_OPS_HUGEPAGES=0)")
    p.add_argument("--bind", choices=["auto", "core", "none"], default="auto",
                   help="pin rank r to CPU r (core), or not (none); auto: core when ranks fit the CPUs, as mpirun "
                   "does by default. Applies to atb_ops, gloo and Open MPI alike")
    p.add_argument("--json", metavar="FILE", help="write the configuration and every row as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="plot algbw vs size per library (needs matplotlib)")
    p.add_argument("--no-mpi", action="store_true", help="skip Open MPI's MPI_Alltoallv")
    p.add_argument("--no-gloo", action="store_true", help="skip torch.distributed.all_to_all_single on gloo")
    p.add_argument("--no-torchscript", action="store_true",
                   help="skip the OperationTorch column (the same execute_out through TorchScript's dispatch)")
    p.add_argument("--no-shared", action="store_true",
                   help="skip the second atb_ops column (send and output tensors from atb_ops.shm_empty)")
    p.add_argument("--no-check", action="store_true", help="skip the #wrong check (it costs time at 256 MiB)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds before a stuck run is abandoned")
    args = p.parse_args(argv)
    if args.world_size < 1:
        p.error(f"--world-size must be >= 1, got {args.world_size}")
    if args.spread <= 0:
        p.error(f"--spread must be > 0, got {args.spread:g}")
    if args.budget <= 0 or args.timeout <= 0:
        p.error("--budget and --timeout must be > 0")
    if args.backend == "nccl" and not torch.cuda.is_available():
        p.error("--backend nccl needs CUDA GPUs, and this torch sees none (torch.cuda.is_available() is False)")
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        p.error("--plot needs matplotlib (pip install matplotlib); nothing was run")
    try:
        args.size_list = workload.parse_sizes(args.sizes)
    except ValueError as e:
        p.error(str(e))
    if args.iters < 0 or args.warmup < 0 or args.rounds < 1:
        p.error("--iters and --warmup must be >= 0, --rounds >= 1")
    if args.op in collectives.REDUCTIONS and args.dtype not in collectives.REDUCIBLE:
        p.error(f"--op {args.op} needs a dtype with a sum, one of {', '.join(collectives.REDUCIBLE)}; got {args.dtype}")
    if args.op != "alltoallv" and args.pattern != "uniform":
        p.error(f"--pattern applies to --op alltoallv only (a {args.op} moves the same amount to every rank)")
    return args


def _start_mpi(cfg: BenchConfig, timeout_s: float, notes: list[str]) -> Any:
    """The Open MPI job, started and idle; None when it cannot run (why is noted)."""
    from atb_ops.bench import mpi

    ok, why = mpi.available()
    if not ok:
        notes.append(f"Open MPI skipped: {why}")
        return None
    try:
        return mpi.MpiJob(cfg.to_json(), cfg.world_size, bind=cfg.bind, timeout_s=min(timeout_s, 600.0))
    except (RuntimeError, OSError) as e:
        notes.append(f"Open MPI failed to start, column left empty: {str(e).splitlines()[0]}")
        print(f"# {e}", file=sys.stderr)
        return None


class Ranks:
    """The spawned benchmark ranks: started once, told to run one size at a time."""

    def __init__(self, cfg: BenchConfig, timeout_s: float, progress: Progress, target: Any = None) -> None:
        from atb_ops.bench import ranks

        target = target or ranks.rank_main
        self.cfg, self.timeout_s, self.progress = cfg, timeout_s, progress
        ctx = mp.get_context("spawn")
        self.results: Any = ctx.Queue()
        self.commands = [ctx.Queue() for _ in range(cfg.world_size)]
        env = {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()),
            "ATB_OPS_JOB_ID": f"bench-{uuid.uuid4().hex}",
            "ATB_OPS_TIMEOUT": str(int(min(timeout_s, 600))),
            "OMP_NUM_THREADS": "1",
            **pages.env_for(cfg.pages),
        }
        self.procs = [ctx.Process(target=target, args=(r, cfg.to_json(), env, self.results, self.commands[r]))
                      for r in range(cfg.world_size)]
        for p in self.procs:
            p.start()
        self._collect("ready", None)  # idle before anything is timed

    def _collect(self, until: str, on_row: Any) -> None:
        seen = 0
        deadline = time.monotonic() + self.timeout_s
        while seen < self.cfg.world_size:
            try:
                kind, value = self.results.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"benchmark ranks did not finish within {self.timeout_s} s") from None
                dead = [r for r, p in enumerate(self.procs) if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"benchmark rank(s) {dead} exited early") from None
                continue
            if kind == "error":
                raise RuntimeError(value)
            if kind == "progress":
                self.progress(value)
            elif kind == "row" and on_row is not None:
                on_row(value)
            elif kind == until:
                seen += 1

    def run(self, index: int, round_no: int, on_row: Any) -> None:
        for q in self.commands:
            q.put((index, round_no))
        self._collect("ran", on_row)

    def close(self) -> None:
        for q in self.commands:
            q.put(None)
        try:
            self._collect("done", None)
        except RuntimeError:
            pass
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)


def _rounds(entries: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """A library's rounds of one size: the median round's time (the table's time), the best, the spread
    ((slowest - fastest) / median) and every round's time; the most wrong elements any round saw."""
    got = [e for e in entries if e is not None and e.get("time_s") == e.get("time_s")]
    if not got:
        return None
    times = [float(e["time_s"]) for e in got]
    median = statistics.median(times)
    return {"time_s": median, "best_s": min(times), "spread": (max(times) - min(times)) / median if median else 0.0,
            "rounds_s": times, "wrong": max(int(e["wrong"]) for e in got)}


def _make_row(raw: list[dict[str, Any]], mpi_raw: list[dict[str, Any] | None], args: argparse.Namespace,
              others: list[str]) -> dict[str, Any]:
    """One table row from every round of one size: each library's median round (best and spread beside it)."""
    first = raw[0]
    nbytes = first["bytes"]
    factor = collectives.bus_factor(args.op, args.world_size)
    figs = {key: report.figures(_rounds([r.get(key) for r in raw]), nbytes, factor)
            for key in ("atb", "torchscript", "shared", "dist", "dist_single", "dist_scatter", "floor", "gloo")}
    figs["mpi"] = report.figures(_rounds(mpi_raw), nbytes, factor)
    memcpy = [r["memcpy_s"] for r in raw if r.get("memcpy_s") and r["memcpy_s"] == r["memcpy_s"]]
    return {
        "size": first["size"], "bytes": nbytes, "count": first["count"], "type": args.dtype,
        "figures": {k: v for k, v in figs.items() if k == "atb" or k in others},
        "memcpy_gbps": nbytes / min(memcpy) / 1e9 if memcpy else None,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Runs the benchmark described by parsed arguments, prints the table, returns the JSON document."""
    import torch

    c10d_api = args.api == "c10d"
    cfg = BenchConfig(
        world_size=args.world_size, op=args.op, api=args.api == "distributed", backend=args.backend,
        sizes=args.size_list, dtype=args.dtype,
        pattern=args.pattern, spread=args.spread, seed=args.seed, iters=args.iters, warmup=args.warmup,
        budget_s=args.budget, gloo=not args.no_gloo, check=not args.no_check, shared=not args.no_shared,
        pages=args.pages,
        torchscript=not args.no_torchscript and not c10d_api,
        bind=args.bind if args.bind != "auto" else ("core" if args.world_size <= len(os.sched_getaffinity(0))
                                                     else "none"),
    )
    cpu_backend = args.backend in ("shm", "gloo", "auto") or (
        args.backend == "hccl" and not hasattr(torch, "npu")
    )
    progress = Progress()
    notes: list[str] = []
    if not cpu_backend or args.backend == "gloo" or c10d_api:
        cfg.shared = False
    if not cpu_backend:
        cfg.gloo = False
        notes.append("gloo and Open MPI columns run only for CPU backends")
    op_name, dist_fn, gloo_fn, mpi_fn = OP_NAMES[args.op]
    want_mpi = cpu_backend and not args.no_mpi
    if want_mpi and args.op in collectives.REDUCTIONS and args.dtype not in MPI_REDUCIBLE:
        notes.append(f"Open MPI skipped: it has no {args.dtype} arithmetic for {mpi_fn}")
        want_mpi = False
    target = None
    if c10d_api:
        from atb_ops.bench import c10d

        target = c10d.rank_main
    ranks = Ranks(cfg, args.timeout, progress, target)
    mpi_job = _start_mpi(cfg, args.timeout, notes) if want_mpi else None
    expert_api = cfg.api and args.op == "alltoallv"
    present = {"torchscript": cfg.torchscript, "shared": cfg.shared, "dist": cfg.api, "dist_single": expert_api,
               "dist_scatter": expert_api,
               "floor": c10d_api, "gloo": cfg.gloo, "mpi": mpi_job is not None}
    others = [k for k in ("torchscript", "shared", "dist", "dist_single", "dist_scatter", "floor", "gloo", "mpi")
              if present[k]]
    labels = {"atb": f"atb_ops c10d backend, {gloo_fn}" if c10d_api else f"atb_ops {args.backend}",
              **{k: LABELS_OTHER[k].format(backend=args.backend, dist=dist_fn, gloo=gloo_fn) for k in LABELS_OTHER},
              "gloo": f"gloo {gloo_fn}", "mpi": f"Open MPI {mpi_fn}"}
    labels = {k: v for k, v in labels.items() if k == "atb" or k in others}
    columns = []
    for k in others:
        if k in ("shared", "torchscript"):
            ratio = ("vs MPI", "self", "mpi") if present["mpi"] else ("vs torch", "self", "atb")
        elif k in ("dist", "dist_single", "dist_scatter"):
            ratio = ("x exec", "atb", "self")  # its time over execute_out's: the framework API's cost
        elif k == "floor":
            ratio = ("x floor", "self", "atb")  # atb_ops' time over torch's own per-call cost
        else:
            ratio = ("speedup", "atb", "self")
        columns.append(report.Column(k, labels[k], *ratio))
    if mpi_job is not None:
        notes.append(f"Open MPI: {mpi_job.library}")
    cores = os.cpu_count() or 1
    pattern = args.pattern + (f" (spread {args.spread:g})" if args.pattern == "skewed" else "")
    rounds = (f"median of {args.rounds} rounds (libraries alternate size by size; best and spread beside it); "
              if args.rounds > 1 else "")
    title = [
        (f"atb_ops bench: torch.distributed.{gloo_fn} on backend 'atb_ops' (reused buffers), "
         f"{args.world_size} rank(s), {args.dtype}, " if c10d_api else
         f"atb_ops bench: {op_name} execute_out (atb_ops.Operation, reused buffers), {args.world_size} rank(s), "
         f"backend {args.backend}, {args.dtype}, ")
        + (f"pattern {pattern}, seed {args.seed}, " if args.op == "alltoallv" else "")
        + f"binding {cfg.bind}",
        f"host: {cores} core(s) {_cpu_model()}, {platform.system()} {platform.release()}, "
        f"torch {torch.__version__}",
        f"size: {SIZE_MEANING[args.op]}; time: {rounds}mean per call, max over ranks; algbw = size/time"
        f" (GB/s = 1e9 B/s); busbw = algbw*{BUS_FORMULA[args.op]}; speedup = their time / atb_ops time;"
        " vs MPI = Open MPI's time / this column's time; x exec = its time / execute_out's time",
        pages.describe(args.pages),
    ]
    rows: list[dict[str, Any]] = []
    try:
        print(report.header([*title, *notes], labels["atb"], columns, args.rounds > 1), flush=True)
        for index, size in enumerate(cfg.sizes):
            raw: list[dict[str, Any]] = []
            mpi_raw: list[dict[str, Any] | None] = []
            for round_no in range(args.rounds):
                if mpi_job is not None:
                    progress(f"{workload.format_bytes(size)}: Open MPI {mpi_fn} (round {round_no + 1})")
                    try:
                        mpi_raw.append(mpi_job.run(index))
                    except RuntimeError as e:
                        print(f"# Open MPI failed; its column stays empty from here: {e}", file=sys.stderr)
                        mpi_job.close()
                        mpi_job = None
                ranks.run(index, round_no, raw.append)
            row = _make_row(raw, mpi_raw, args, [k for k in others])
            rows.append(row)
            print(report.row_line(row, args.dtype, columns, args.rounds > 1), flush=True)
    finally:
        ranks.close()
        if mpi_job is not None:
            mpi_job.close()
    moved = {k: v for k, v in labels.items() if k != "floor"}  # the floor moves nothing: no bandwidth
    print(report.footer(rows, moved, args.world_size, cores), flush=True)
    if "floor" in labels:
        print(report.above_floor(rows), flush=True)
    doc = {"config": {**json.loads(cfg.to_json()), "rounds": args.rounds}, "labels": labels,
           "host": {"cores": cores, "cpu": _cpu_model()}, "notes": notes, "rows": rows}
    doc["avg_busbw"] = {key: report.avg_busbw(rows, key) for key in labels}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.plot:
        report.plot(args.plot, rows, labels, f"{args.op}, {args.world_size} ranks, {args.dtype}"
                    + (f", {pattern}" if args.op == "alltoallv" else ""),
                    args.world_size, cores)
    return doc


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    doc = run(args)
    wrong = sum(f["wrong"] for r in doc["rows"] for f in r["figures"].values() if f is not None)
    return 1 if wrong else 0
