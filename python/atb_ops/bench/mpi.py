"""Open MPI's column of the collectives bench: the ``mpirun`` job, started and driven from the parent.

``python -m atb_ops bench`` starts atb_ops.bench.mpi_ranks as one ``mpirun`` job next to its own ranks:

    mpirun -n N --allow-run-as-root --oversubscribe --bind-to core|none \\
        python -m atb_ops.bench.mpi_ranks CONFIG.json DIR

The job runs one size per command, so the parent can alternate it with atb_ops size by size: rank r reads size
indices from the FIFO ``DIR/cmd.<r>`` (a blocking read: idle MPI ranks sleep instead of polling while atb_ops is
timed) and rank 0 answers each with one JSON line ``{"index", "size", "time_s", "wrong"}`` on ``DIR/results``
(after a first line ``{"library": ...}``).
"""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Open MPI reduces what numpy and MPI both type; it has no float16/bfloat16 arithmetic.
REDUCIBLE = ("int8", "int16", "int32", "int64", "float32", "float64", "uint8")
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


def _across(hosts: Any, world_size: int, folder: Path) -> list[str]:
    """mpirun's flags that put world_size / hosts.n ranks on each emulated host, host by host: the hosts by their
    bridge address, an rsh agent (a script in `folder`) that runs Open MPI's daemon inside the named host, and TCP
    on the hosts' one interface between them."""
    per_host = world_size // hosts.n
    cases = ""
    for h in range(hosts.n):
        enter = " ".join(shlex.quote(a) for a in hosts.nsenter_argv(h, wd=os.getcwd(), own_files=False))
        cases += f'  {hosts.addresses[h]}) exec {enter} -- sh -c "$*" ;;\n'
    agent = folder / "enter_host"
    agent.write_text(f'#!/bin/sh\nhost="$1"; shift\ncase "$host" in\n{cases}esac\n'
                     'echo "unknown emulated host $host" >&2; exit 1\n')
    agent.chmod(0o755)
    interface = hosts.interface
    return ["--host", ",".join(f"{a}:{per_host}" for a in hosts.addresses), "--mca", "plm_rsh_agent", str(agent),
            "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", interface,
            "--mca", "oob_tcp_if_include", interface]


class MpiJob:
    """The running mpirun job (Open MPI's ranks, atb_ops.bench.mpi_ranks); `run(index)` times one size on it."""

    def __init__(self, cfg_json: str, world_size: int, bind: str = "none", timeout_s: float = 600.0,
                 hosts: Any = None) -> None:
        """Starts the job and waits until its ranks are idle on their FIFOs.

        Args:
            cfg_json: the run's BenchConfig as JSON (the MPI ranks read it from a file).
            world_size: MPI ranks (as many as atb_ops').
            bind: "core" or "none", mpirun's --bind-to.
            timeout_s: how long starting, or any one size, may take.
            hosts: an atb_ops.emulated_hosts.EmulatedHosts to spread the ranks over as atb_ops' are (mpirun runs in
                the first host and starts the others' ranks through an agent that enters their host; TCP between
                hosts, shared memory within one); None: every rank on this host.

        Raises:
            RuntimeError: With the job's output, when it exits or does not start within timeout_s.
        """
        import atb_ops
        from atb_ops.bench import pages
        from atb_ops.bench.config import BenchConfig

        self.timeout_s = timeout_s
        self.dir = Path(tempfile.mkdtemp(prefix="atb_ops_bench_mpi."))
        (self.dir / "config.json").write_text(cfg_json)
        for r in range(world_size):
            os.mkfifo(self.dir / f"cmd.{r}", 0o600)
        os.mkfifo(self.dir / "results", 0o600)
        python_dir = str(Path(atb_ops.__file__).resolve().parent.parent)
        same_env = [arg for k, v in pages.env_for(BenchConfig.from_json(cfg_json).pages).items()
                    for arg in ("-x", f"{k}={v}")]
        placement = [] if hosts is None else _across(hosts, world_size, self.dir)
        # The job's FIFOs and files stay where the parent sees them: the hosts' network and names only.
        enter = [] if hosts is None else [*hosts.nsenter_argv(0, wd=os.getcwd(), own_files=False), "--"]
        flags = MPIRUN_FLAGS if hosts is None else [f for f in MPIRUN_FLAGS if f not in ("--mca", "btl", "self,vader")]
        self.cmd = [*enter, "mpirun", "-n", str(world_size), *flags, *placement, *BIND_FLAGS[bind],
                    "-x", f"PYTHONPATH={python_dir}", *same_env,
                    sys.executable, "-m", "atb_ops.bench.mpi_ranks", str(self.dir / "config.json"), str(self.dir)]
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
        """The error to raise: `why`, the command line and the last 30 lines of the job's output."""
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
        """Times size `index` of the configuration.

        Args:
            index: the size's index.

        Returns:
            {"index", "size", "time_s" (max over ranks), "wrong" (sum over ranks)}.

        Raises:
            RuntimeError: When the job exits or gives no answer within the timeout.
        """
        for fd in self.cmd_fds:
            os.write(fd, f"{index}\n".encode())
        return self._read_line(f"a result for size index {index}")

    def _read_line(self, what: str) -> dict[str, Any]:
        """The next JSON line rank 0 writes (`what` names it in the error when none comes)."""
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
        """Tells every rank to quit, waits for the job (killing it after 30 s) and removes its directory."""
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
