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
4. **gloo**: ``torch.distributed.all_to_all_single`` on a gloo group, same counts (``--no-gloo`` skips); with
   ``--backend nccl`` the same call on torch's nccl group, the same GPUs;
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
import importlib
import importlib.util
import os
import sys

import torch

from atb_ops.bench import collectives, driver, ops, pages, workload

DEFAULT_SIZES = "1K:256M"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The collectives bench's flags, checked.

    Args:
        argv: the arguments after ``bench`` (None: the command line's).

    Returns:
        The flags, with ``size_list`` (the parsed --sizes) added.

    Raises:
        SystemExit: With argparse's usage message and status 2 for a value it cannot run (before anything starts).
    """
    p = argparse.ArgumentParser(
        prog="python -m atb_ops bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="--op quant_allreduce (atb_ops.quant's int8 all-reduce) takes flags of its own: --world-size, --sizes, "
               "--dtype, --out-dtype, --block-size, --warmup, --iters, --rounds, --path auto|shm|group, --thp, "
               "--hosts, --link-rate, --json (python -m atb_ops bench --op quant_allreduce --help); --op "
               "linear_parallel (LinearParallelOperation "
               "against matmul + all-reduce) likewise: --world-size, --backend, --sizes, --k, --n, --dtype, --iters, "
               "--budget, --warmup, --rounds, --no-gloo, --json (python -m atb_ops bench --op linear_parallel --help)")
    p.add_argument("--op", default="alltoallv", choices=[*ops.COLLECTIVES, *ops.OWN_BENCHES],
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
    p.add_argument("--hosts", type=int, default=0, metavar="H",
                   help="run the ranks on H emulated hosts (network namespaces on a private bridge, each with its own "
                        "host name and /dev/shm; made for the run and removed after it; needs root), --world-size / H "
                        "ranks on each, host by host; the footer gives the link limit of each size")
    p.add_argument("--link-rate", metavar="RATE",
                   help="with --hosts: shape every host's link to RATE each way (tc's spelling, e.g. 10gbit); "
                        "default unshaped")
    p.add_argument("--json", metavar="FILE", help="write the configuration and every row as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="plot algbw vs size per library (needs matplotlib)")
    p.add_argument("--no-mpi", action="store_true", help="skip Open MPI's MPI_Alltoallv")
    p.add_argument("--no-gloo", action="store_true",
                   help="skip torch.distributed's own call (on gloo; on nccl with --backend nccl)")
    p.add_argument("--no-torchscript", action="store_true",
                   help="skip the OperationTorch column (the same execute_out through TorchScript's dispatch)")
    p.add_argument("--no-shared", action="store_true",
                   help="skip the second atb_ops column (send and output tensors from atb_ops.shm_empty)")
    p.add_argument("--no-check", action="store_true", help="skip the #wrong check (it costs time at 256 MiB)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds before a stuck run is abandoned")
    args = p.parse_args(argv)
    if args.world_size < 1:
        p.error(f"--world-size must be >= 1, got {args.world_size}")
    if not args.spread >= 1:  # NaN too
        p.error(f"--spread must be >= 1 (1 is uniform), got {args.spread:g}")
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
    check_sizes(p, args.size_list, args.dtype, args.world_size)
    check_repeats(p, args.iters, args.warmup, args.rounds)
    check_output_files(p, json=args.json, plot=args.plot)
    if args.op in ops.COLLECTIVES and ops.COLLECTIVES[args.op].reduces and args.dtype not in collectives.REDUCIBLE:
        p.error(f"--op {args.op} needs a dtype with a sum, one of {', '.join(collectives.REDUCIBLE)}; got {args.dtype}")
    _check_hosts(p, args)
    if args.op != "alltoallv" and args.pattern != "uniform":
        p.error(f"--pattern applies to --op alltoallv only (a {args.op} moves the same amount to every rank)")
    return args


def _check_hosts(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--hosts and --link-rate, before anything starts: H divides the ranks, the backend spans hosts (shm by
    default becomes auto: shared memory within a host, gloo between), and this machine can make the hosts."""
    if not check_hosts(p, args.hosts, args.world_size, args.link_rate):
        return
    if args.backend == "shm":
        args.backend = "auto"  # shm by name is one host's; auto is shm within a host and gloo between
    if args.backend not in ("auto", "hccl", "gloo"):
        p.error(f"--backend {args.backend} does not run on CPU ranks across hosts; use auto, hccl or gloo")
    if args.api == "c10d":
        p.error("--hosts times the ATB surface (--api atb or distributed)")


def check_hosts(p: argparse.ArgumentParser, hosts: int, world_size: int, link_rate: str | None) -> bool:
    """The checks every bench makes of --hosts and --link-rate (argparse's error on a bad one).

    Args:
        p: the bench's parser (its error() exits with the usage message).
        hosts: --hosts (0: none).
        world_size: --world-size, which hosts must divide.
        link_rate: --link-rate, or None.

    Returns:
        Whether the run uses emulated hosts (the checks passed and hosts > 0).
    """
    if link_rate and not hosts:
        p.error("--link-rate shapes the links of --hosts; give --hosts too")
    if not hosts:
        return False
    if hosts < 1 or world_size % hosts:
        p.error(f"--hosts must be >= 1 and divide --world-size; got --hosts {hosts} for {world_size} ranks")
    from atb_ops import emulated_hosts

    try:
        if link_rate:
            emulated_hosts.parse_rate(link_rate)
    except (ValueError, emulated_hosts.EmulatedHostsError) as e:
        p.error(f"--link-rate: {e}")
    why = emulated_hosts.available(shaping=bool(link_rate))
    if why is not None:
        p.error(f"--hosts needs emulated hosts, which this machine cannot make: {why}")
    return True


def check_repeats(p: argparse.ArgumentParser, iters: int, warmup: int, rounds: int, *, least_iters: int = 0) -> None:
    """The checks every bench makes of --iters, --warmup and --rounds (argparse's error on a bad one).

    Args:
        p: the bench's parser.
        iters: --iters (0, where least_iters is 0: as many as fit the bench's budget).
        warmup: --warmup.
        rounds: --rounds.
        least_iters: the smallest --iters this bench takes.
    """
    if iters < least_iters or warmup < 0 or rounds < 1:
        p.error(f"--iters must be >= {least_iters}, --warmup >= 0 and --rounds >= 1; got --iters {iters}, "
                f"--warmup {warmup}, --rounds {rounds}")


def check_sizes(p: argparse.ArgumentParser, sizes: list[int], dtype: str, world_size: int) -> None:
    """Every size holds at least one element of `dtype`, and a run's buffers (an input and an output of the size per
    rank, at least) fit this machine's memory: said before anything runs, not as an empty row or an allocator's
    traceback.

    Args:
        p: the bench's parser.
        sizes: bytes per rank.
        dtype: the --dtype given.
        world_size: ranks on this machine.
    """
    es = workload.element_size(workload.DTYPES[dtype])
    if small := [s for s in sizes if s < es]:
        p.error(f"--sizes {', '.join(workload.format_bytes(s) for s in small)}: less than one {dtype} element "
                f"({es} B)")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if (need := 2 * max(sizes) * world_size) > memory:
        p.error(f"--sizes {workload.format_bytes(max(sizes))}: {world_size} rank(s) need at least {need >> 20} MiB "
                f"(an input and an output each), more than this machine's {memory >> 20} MiB")


PLOT_FORMATS = (".png", ".svg", ".pdf", ".jpg", ".jpeg")


def check_output_files(p: argparse.ArgumentParser, **files: str | None) -> None:
    """Files a bench writes when it ends (--json, --plot): their folders must exist and be writable before anything
    runs, not after a long run.

    Args:
        p: the bench's parser.
        files: option name (without the dashes) -> the path given, or None.
    """
    for option, path in files.items():
        if not path:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            p.error(f"--{option} {path}: the folder {folder} does not exist or is not writable; nothing was run")
        if os.path.isdir(path):
            p.error(f"--{option} {path} is a folder; give a file name")
        if option == "plot" and not path.lower().endswith(PLOT_FORMATS):
            p.error(f"--plot {path}: name a {', '.join(f[1:] for f in PLOT_FORMATS)} file; nothing was run")


def op_named(argv: list[str]) -> str | None:
    """The value of --op in bench arguments (--op NAME or --op=NAME), if any: the benches of OWN_BENCHES take
    flags of their own, so the choice is made before any parser reads the rest."""
    for i, arg in enumerate(argv):
        if arg == "--op" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--op="):
            return arg.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    """``python -m atb_ops bench [options]``: the bench --op names, its table printed.

    Args:
        argv: the arguments after ``bench`` (None: the command line's).

    Returns:
        The exit status: 1 when any library got an element wrong, else 0 (an own bench's status for those).
    """
    own = ops.OWN_BENCHES.get(op_named(list(sys.argv[1:] if argv is None else argv)) or "")
    if own is not None:
        return importlib.import_module(own).main(argv)
    doc = driver.run(parse_args(argv))
    wrong = sum(f["wrong"] for r in doc["rows"] for f in r["figures"].values() if f is not None)
    return 1 if wrong else 0
