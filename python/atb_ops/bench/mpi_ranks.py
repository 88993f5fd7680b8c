"""Open MPI's ranks in the collectives bench (mpi4py): ``python -m atb_ops.bench.mpi_ranks CONFIG.json DIR``.

atb_ops.bench.mpi starts this module under ``mpirun``. Every MPI rank builds the same layout and payload as the
atb_ops ranks (atb_ops.bench.plan and .collectives), moves it with ``Alltoallv`` on MPI_BYTE (byte counts and
displacements, so every dtype moves the same way), ``Allgather`` or ``Bcast``, or reduces it with ``Allreduce`` /
``Reduce_scatter_block`` (MPI_SUM on the numpy type), checks what it received and times it through the same loop
as every library (atb_ops.bench.timing.time_loop). It serves one size per line of its FIFO ``DIR/cmd.<rank>``
until ``quit``; rank 0 writes each size's result as a JSON line on ``DIR/results``.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from atb_ops.bench import collectives, workload
from atb_ops.bench.config import BenchConfig
from atb_ops.bench.plan import alltoallv_data
from atb_ops.bench.timing import time_loop


def _collective_call(cfg: BenchConfig, comm: Any, mpi: Any, index: int) -> tuple[Callable[[], Any], Any, Any]:
    """(call, check, reused buffers) of MPI's allreduce / reduce_scatter / allgather / broadcast for size `index`;
    check() makes the checked call and counts the wrong elements."""
    rank, n = comm.Get_rank(), comm.Get_size()
    dtype = workload.DTYPES[cfg.dtype]
    data = collectives.rank_data(cfg.op, cfg.sizes[index], rank, n, dtype)
    x = data.mine
    out = torch.empty(data.numel_out, dtype=dtype)
    # Bytes where nothing is reduced (every dtype moves the same way), the numpy type where MPI sums.
    raw = (lambda t: t.view(torch.uint8).numpy()) if cfg.op in ("allgather", "broadcast") else (lambda t: t.numpy())
    call = {
        "allreduce": functools.partial(comm.Allreduce, raw(x), raw(out), op=mpi.SUM),
        "reduce_scatter": functools.partial(comm.Reduce_scatter_block, raw(x), raw(out), op=mpi.SUM),
        "allgather": functools.partial(comm.Allgather, raw(x), raw(out)),
        "broadcast": functools.partial(comm.Bcast, raw(x), root=collectives.ROOT),
    }[cfg.op]
    result = x if cfg.op == "broadcast" else out

    def check() -> int:
        if cfg.op != "broadcast" or rank != collectives.ROOT:
            workload.poison(result)
        call()
        return collectives.count_wrong(result, data.want)

    return call, check, (x,) if cfg.op == "broadcast" else (x, out)


def _alltoallv_call(cfg: BenchConfig, comm: Any, mpi: Any, index: int) -> tuple[Callable[[], Any], Any, Any]:
    """(call, check, reused buffers) of MPI_Alltoallv on bytes for size `index`; check() makes the checked call
    and counts the wrong elements."""
    data = alltoallv_data(cfg, cfg.sizes[index], comm.Get_rank())
    lay, send = data.plan.layout, data.send
    es = workload.element_size(send.dtype)
    out = torch.empty(lay.recv_numel, dtype=send.dtype)
    sbuf, rbuf = send.view(torch.uint8).numpy(), out.view(torch.uint8).numpy()
    send_spec = [sbuf, ([c * es for c in lay.send_counts], [d * es for d in lay.sdispls]), mpi.BYTE]
    recv_spec = [rbuf, ([c * es for c in lay.recv_counts], [d * es for d in lay.rdispls]), mpi.BYTE]
    call = functools.partial(comm.Alltoallv, send_spec, recv_spec)

    def check() -> int:
        workload.poison(out)
        call()
        return data.wrong(out)

    return call, check, (send, out)


def run_size(cfg: BenchConfig, comm: Any, mpi: Any, index: int) -> dict[str, Any]:
    """Checks and times size `index` on every MPI rank.

    Args:
        cfg: the run.
        comm: MPI.COMM_WORLD.
        mpi: mpi4py's MPI module.
        index: the size's index in the configuration.

    Returns:
        {"index", "size", "time_s" (max over ranks), "wrong" (sum over ranks)}.
    """
    build = _alltoallv_call if cfg.op == "alltoallv" else _collective_call
    call, check, reused = build(cfg, comm, mpi, index)
    wrong = check() if cfg.check else 0

    def reduce_max(v: float) -> float:
        return comm.allreduce(v, op=mpi.MAX)

    seconds = reduce_max(time_loop(call, cfg, reduce_max, comm.Barrier, lambda: None, reused))
    return {"index": index, "size": cfg.sizes[index], "time_s": seconds, "wrong": comm.allreduce(wrong, op=mpi.SUM)}


def main(argv: list[str] | None = None) -> int:
    """One MPI rank: serve size indices from DIR/cmd.<rank> until 'quit'.

    Args:
        argv: CONFIG.json DIR (default: the command line).

    Returns:
        0.

    Raises:
        SystemExit: When mpirun started another number of ranks than the configuration says.
    """
    from mpi4py import MPI

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = BenchConfig.from_json(Path(args[0]).read_text())
    serve_dir = Path(args[1])
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    if n != cfg.world_size:
        raise SystemExit(f"mpirun started {n} ranks, config says {cfg.world_size}")
    torch.set_num_threads(1)
    with open(serve_dir / f"cmd.{rank}") as commands:
        results = open(serve_dir / "results", "w") if rank == 0 else None  # noqa: SIM115
        try:
            if results is not None:
                library = MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0]
                results.write(json.dumps({"library": library}) + "\n")
                results.flush()
            for line in commands:
                if line.strip() == "quit":
                    break
                row = run_size(cfg, comm, MPI, int(line))
                if results is not None:
                    results.write(json.dumps(row) + "\n")
                    results.flush()
        finally:
            if results is not None:
                results.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
