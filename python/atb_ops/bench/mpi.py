"""Open MPI's MPI_Alltoallv on the benchmark's counts, displacements and bytes (mpi4py).

Run by ``python -m atb_ops bench`` as a separate job, before its own ranks start:

    mpirun -n N --allow-run-as-root --oversubscribe python -m atb_ops.bench.mpi CONFIG.json OUT.json

Every rank builds the same layout and payload as the atb_ops ranks (atb_ops.bench.workload), moves
it with ``Alltoallv`` on MPI_BYTE (byte counts and displacements, so every dtype moves the same way),
checks the received bytes, and times the same kind of loop. Rank 0 writes one JSON object:
``{"rows": [{"index", "size", "time_s", "wrong"}...], "library": "..."}``.
"""

from __future__ import annotations

import functools
import json
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


def run_job(cfg_json: str, world_size: int, bind: str = "none", timeout_s: float = 1800.0,
            progress: Any = None) -> dict[str, Any]:
    """Runs the helper under mpirun and returns its JSON result.

    Raises:
        RuntimeError: When the job fails or times out (with its output's tail).
    """
    import atb_ops

    python_dir = str(Path(atb_ops.__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="atb_ops_bench_mpi.") as tmp:
        cfg_path, out_path = Path(tmp, "config.json"), Path(tmp, "out.json")
        cfg_path.write_text(cfg_json)
        cmd = ["mpirun", "-n", str(world_size), *MPIRUN_FLAGS, *BIND_FLAGS[bind], "-x", f"PYTHONPATH={python_dir}",
               sys.executable, "-m", "atb_ops.bench.mpi", str(cfg_path), str(out_path)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        deadline = time.monotonic() + timeout_s
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if progress is not None and line.startswith("# progress "):
                progress(line[len("# progress "):].strip())
            if time.monotonic() > deadline:
                proc.kill()
                break
        rc = proc.wait()
        if rc != 0 or not out_path.exists():
            tail = "\n".join(lines[-30:])
            raise RuntimeError(f"Open MPI job failed (exit {rc}): {' '.join(cmd)}\n{tail}")
        return json.loads(out_path.read_text())


def main(argv: list[str] | None = None) -> int:
    import torch
    from mpi4py import MPI

    from atb_ops.bench import workload
    from atb_ops.bench.ranks import BenchConfig, plan_for, time_loop

    args = list(sys.argv[1:] if argv is None else argv)
    cfg = BenchConfig.from_json(Path(args[0]).read_text())
    comm = MPI.COMM_WORLD
    rank, n = comm.Get_rank(), comm.Get_size()
    if n != cfg.world_size:
        raise SystemExit(f"mpirun started {n} ranks, config says {cfg.world_size}")
    torch.set_num_threads(1)
    dtype = workload.DTYPES[cfg.dtype]
    es = workload.element_size(dtype)

    def reduce_max(v: float) -> float:
        return comm.allreduce(v, op=MPI.MAX)

    rows = []
    for index, size in enumerate(cfg.sizes):
        plan = plan_for(cfg, size, rank)
        lay = plan.layout
        if rank == 0:
            print(f"# progress {workload.format_bytes(size)}: Open MPI MPI_Alltoallv", flush=True)
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
        seconds = time_loop(call, cfg, reduce_max, comm.Barrier, lambda: None)
        seconds = comm.allreduce(seconds, op=MPI.MAX)
        wrong = comm.allreduce(wrong, op=MPI.SUM)
        rows.append({"index": index, "size": size, "time_s": seconds, "wrong": wrong})
    if rank == 0:
        library = MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0]
        Path(args[1]).write_text(json.dumps({"rows": rows, "library": library}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
