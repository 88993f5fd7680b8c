"""Open MPI's MPI_Alltoallv, MPI_Allreduce or MPI_Reduce_scatter_block on the benchmark's data (mpi4py).

``python -m atb_ops bench`` starts this module as one ``mpirun`` job next to its own ranks:

    mpirun -n N --allow-run-as-root --oversubscribe --bind-to core|none \\
        python -m atb_ops.bench.mpi CONFIG.json DIR

Every MPI rank builds the same layout and payload as the atb_ops ranks (atb_ops.bench.workload and
.collectives), moves it with ``Alltoallv`` on MPI_BYTE (byte counts and displacements, so every dtype moves
the same way), ``Allgather`` or ``Bcast``, or reduces it with ``Allreduce`` / ``Reduce_scatter_block``
(MPI_SUM on the numpy type), checks what it received and times the same kind of loop. The job runs one size per command,
so the parent can alternate it with atb_ops size by size: rank r reads size indices from the FIFO
``DIR/cmd.<r>`` (a blocking read: idle MPI ranks sleep instead of polling while atb_ops is timed) and
rank 0 answers each with one JSON line ``{"index", "size", "time_s", "wrong"}`` on ``DIR/results``
(after a first line ``{"library": ...}``).
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MPIRUN_FLAGS = ["--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
BIND_FLAGS = {"core": ["--bind-to", "core"], "none": ["--bind-to", "none"]}


def available() -> tuple[bool, str]:
    """Whether mpirun and mpi4py are here; when not, why (for the table's header)."""
    if shutil.which("mpirun") is None:
        return False, "mpirun not found (scripts/install_bench_deps.sh installs Open MPI)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False, "mpi4py not installed (scripts/install_bench_deps.sh installs it)"
    return True, ""


class MpiJob:
    """The running mpirun job; `run(index)` times one size on it.

    Raises RuntimeError (with the job's output) when the job dies or does not answer in time.
    """

    def __init__(self, cfg_json: str, world_size: int, bind: str = "none", timeout_s: float = 600.0) -> None:
        import atb_ops
        from atb_ops.bench import pages
        from atb_ops.bench.ranks import BenchConfig

        self.timeout_s = timeout_s
        self.dir = Path(tempfile.mkdtemp(prefix="atb_ops_bench_mpi."))
        (self.dir / "config.json").write_text(cfg_json)
        for r in range(world_size):
            os.mkfifo(self.dir / f"cmd.{r}", 0o600)
        os.mkfifo(self.dir / "results", 0o600)
        python_dir = str(Path(atb_ops.__file__).resolve().parent.parent)
        same_env = [arg for k, v in pages.env_for(BenchConfig.from_json(cfg_json).pages).items()
                    for arg in ("-x", f"{k}={v}")]
        self.cmd = ["mpirun", "-n", str(world_size), *MPIRUN_FLAGS, *BIND_FLAGS[bind], "-x", f"PYTHONPATH={python_dir}",
                    *same_env,
                    sys.executable, "-m", "atb_ops.bench.mpi", str(self.dir / "config.json"), str(self.dir)]
        self.log = open(self.dir / "log", "w+")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.cmd_fds: list[int] = []
        self.res_fd = -1
        self.pending = b""
        try:
            deadline = time.monotonic() + timeout_s
            for r in range(world_size):
                self.cmd_fds.append(self._open_writer(self.dir / f"cmd.{r}", deadline))
            self.res_fd = os.open(self.dir / "results", os.O_RDONLY | os.O_NONBLOCK)
            self.library = str(self._read_line("its library version")["library"])
        except BaseException:
            self.close()
            raise

    def _fail(self, why: str) -> RuntimeError:
        self.log.flush()
        self.log.seek(0)
        tail = "\n".join(self.log.read().splitlines()[-30:])
        return RuntimeError(f"Open MPI job {why}: {' '.join(self.cmd)}\n{tail}")

    def _open_writer(self, path: Path, deadline: float) -> int:
        """Opens a FIFO for writing once its MPI rank has opened it for reading."""
        while True:
            try:
                return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                if self.proc.poll() is not None:
                    raise self._fail(f"exited with {self.proc.returncode} before it started") from None
                if time.monotonic() > deadline:
                    raise self._fail(f"did not start within {self.timeout_s} s") from None
                time.sleep(0.05)

    def run(self, index: int) -> dict[str, Any]:
        """Times size `index` of the configuration; {"index", "size", "time_s", "wrong"}."""
        for fd in self.cmd_fds:
            os.write(fd, f"{index}\n".encode())
        return self._read_line(f"a result for size index {index}")

    def _read_line(self, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while b"\n" not in self.pending:
            if self.proc.poll() is not None:
                raise self._fail(f"exited with {self.proc.returncode}")
            if time.monotonic() > deadline:
                raise self._fail(f"gave no {what} within {self.timeout_s} s")
            ready, _, _ = select.select([self.res_fd], [], [], 0.2)
            chunk = os.read(self.res_fd, 65536) if ready else b""
            if ready and not chunk:
                time.sleep(0.05)  # no writer yet (EOF): do not spin while the job is being timed
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        for fd in self.cmd_fds:
            try:
                os.write(fd, b"quit\n")
                os.close(fd)
            except OSError:
                pass
        self.cmd_fds = []
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.res_fd >= 0:
            os.close(self.res_fd)
            self.res_fd = -1
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """One MPI rank: serve size indices from DIR/cmd.<rank> until 'quit'."""
    import torch
    from mpi4py import MPI

    from atb_ops.bench import workload
    from atb_ops.bench.ranks import BenchConfig, plan_for, time_loop

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = BenchConfig.from_json(Path(args[0]).read_text())
    serve_dir = Path(args[1])
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    if n != cfg.world_size:
        raise SystemExit(f"mpirun started {n} ranks, config says {cfg.world_size}")
    torch.set_num_threads(1)
    dtype = workload.DTYPES[cfg.dtype]
    es = workload.element_size(dtype)

    def reduce_max(v: float) -> float:
        return comm.allreduce(v, op=MPI.MAX)

    def run_collective(index: int) -> dict[str, Any]:
        from atb_ops.bench import collectives

        size = cfg.sizes[index]
        numel_in, numel_out = collectives.shapes(cfg.op, size, n, dtype)
        x = collectives.values(numel_in, rank, dtype)
        out = torch.empty(numel_out, dtype=dtype)
        want = collectives.expected(cfg.op, numel_in, rank, n, dtype)
        # Bytes where nothing is reduced (every dtype moves the same way), the numpy type where MPI sums.
        raw = (lambda t: t.view(torch.uint8).numpy()) if cfg.op in ("allgather", "broadcast") else (lambda t: t.numpy())
        call = {
            "allreduce": functools.partial(comm.Allreduce, raw(x), raw(out), op=MPI.SUM),
            "reduce_scatter": functools.partial(comm.Reduce_scatter_block, raw(x), raw(out), op=MPI.SUM),
            "allgather": functools.partial(comm.Allgather, raw(x), raw(out)),
            "broadcast": functools.partial(comm.Bcast, raw(x), root=collectives.ROOT),
        }[cfg.op]
        result = x if cfg.op == "broadcast" else out
        wrong = 0
        if cfg.check:
            if cfg.op != "broadcast" or rank != collectives.ROOT:
                workload.poison(result)
            call()
            wrong = collectives.count_wrong(result, want)
        reused = (x,) if cfg.op == "broadcast" else (x, out)
        seconds = comm.allreduce(time_loop(call, cfg, reduce_max, comm.Barrier, lambda: None, reused), op=MPI.MAX)
        return {"index": index, "size": size, "time_s": seconds, "wrong": comm.allreduce(wrong, op=MPI.SUM)}

    def run_size(index: int) -> dict[str, Any]:
        if cfg.op != "alltoallv":
            return run_collective(index)
        size = cfg.sizes[index]
        lay = (plan := plan_for(cfg, size, rank)).layout
        seq = workload.sequence_for(plan.matrix, dtype)
        send = torch.empty(lay.send_numel, dtype=dtype)
        workload.fill_send(send, lay, rank, cfg.seed, seq)
        out = torch.empty(lay.recv_numel, dtype=dtype)
        sbuf, rbuf = send.view(torch.uint8).numpy(), out.view(torch.uint8).numpy()
        send_spec = [sbuf, ([c * es for c in lay.send_counts], [d * es for d in lay.sdispls]), MPI.BYTE]
        recv_spec = [rbuf, ([c * es for c in lay.recv_counts], [d * es for d in lay.rdispls]), MPI.BYTE]
        call = functools.partial(comm.Alltoallv, send_spec, recv_spec)
        wrong = 0
        if cfg.check:
            workload.poison(out)
            call()
            wrong = workload.count_wrong(out, lay, rank, cfg.seed, seq)
        seconds = comm.allreduce(time_loop(call, cfg, reduce_max, comm.Barrier, lambda: None, (send, out)),
                                 op=MPI.MAX)
        return {"index": index, "size": size, "time_s": seconds, "wrong": comm.allreduce(wrong, op=MPI.SUM)}

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
                row = run_size(int(line))
                if results is not None:
                    results.write(json.dumps(row) + "\n")
                    results.flush()
        finally:
            if results is not None:
                results.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
