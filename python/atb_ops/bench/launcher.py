"""The bench's rank launcher: ranks spawned on this host once, then told to run one size at a time.

Every bench (the collectives, ``--api c10d``, quant_allreduce, linear_parallel) runs its ranks through ``Ranks``;
only Open MPI's ranks are started by ``mpirun`` instead (atb_ops.bench.mpi). The protocol, on two kinds of
queue:

- parent -> rank r, on its commands queue: ``(size index, round)`` to run, ``None`` to stop;
- ranks -> parent, on the shared results queue: ``("ready", rank)`` once set up, ``("row", value)`` for each
  table row (rank 0 only), ``("progress", text)`` (rank 0 only), ``("ran", rank)`` when a size is done,
  ``("done", rank)`` after ``None``, or ``("error", traceback)``.

A rank runs ``serve_rank``, which sets its environment and hands over to the bench's ``run_rank(rank, config,
results, commands)``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import shlex
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from atb_ops._launch import free_port

RunRank = Callable[[int, Any, Any, Any], None]


class Progress:
    """Progress lines on stderr, once a run has lasted a few seconds (short runs stay quiet)."""

    def __init__(self, quiet_for_s: float = 3.0) -> None:
        """Starts the clock; nothing is printed before `quiet_for_s` seconds have passed."""
        self.start = time.monotonic()
        self.quiet_for_s = quiet_for_s

    def __call__(self, what: str) -> None:
        """Prints `what` with the seconds since the start, once the quiet time is over."""
        elapsed = time.monotonic() - self.start
        if elapsed >= self.quiet_for_s:
            print(f"# [{elapsed:6.1f} s] {what}", file=sys.stderr, flush=True)


class Ranks:
    """The spawned benchmark ranks: started once, told to run one size at a time."""

    def __init__(self, run_rank: RunRank, config: Any, world_size: int, *, job: str, env: dict[str, str],
                 timeout_s: float, progress: Callable[[str], None] | None = None,
                 hosts: Any = None) -> None:
        """Spawns the ranks and waits until every one is set up (nothing is timed before that).

        Args:
            run_rank: the bench's rank body, a module-level function (spawn pickles it by name).
            config: what every rank gets as its configuration (picklable).
            world_size: how many ranks.
            job: prefix of ATB_OPS_JOB_ID (this run's ranks meet only each other).
            env: variables of this bench for every rank, beside the job's address, id and timeout.
            timeout_s: how long any one step (setting up, a size, stopping) may take.
            progress: what the ranks' progress lines are handed to (None: dropped).
            hosts: an atb_ops.emulated_hosts.EmulatedHosts whose hosts get the ranks, host by host in equal numbers
                (rank r on host r // (world_size / hosts.n)); None: every rank on this host.

        Raises:
            RuntimeError: When a rank fails, exits early or does not get ready within timeout_s.
        """
        self.world_size, self.timeout_s = world_size, timeout_s
        self.progress = progress or (lambda what: None)
        ctx = mp.get_context("spawn")
        self.results: Any = ctx.Queue()
        self.commands = [ctx.Queue() for _ in range(world_size)]
        rank_env = {
            "MASTER_ADDR": "127.0.0.1" if hosts is None else hosts.addresses[0],
            "MASTER_PORT": str(free_port()),
            "ATB_OPS_JOB_ID": f"{job}-{uuid.uuid4().hex}",
            "ATB_OPS_TIMEOUT": str(int(min(timeout_s, 600))),
            # In an emulated host the rank keeps this machine's /etc/hosts, where its host name does not resolve
            # to its bridge address: gloo is told the interface instead.
            **({} if hosts is None else {"GLOO_SOCKET_IFNAME": hosts.interface}),
            **env,
        }
        self.procs = [ctx.Process(target=serve_rank, args=(run_rank, r, config, rank_env, self.results,
                                                            self.commands[r]))
                      for r in range(world_size)]
        # Every rank's interpreter: this one, or one that enters its emulated host (rank r on host r // per host).
        self._folder = tempfile.TemporaryDirectory(prefix="atb_ops_bench_hosts_") if hosts is not None else None
        executables = [sys.executable] * world_size
        if hosts is not None:
            scripts = _scripts_entering(hosts, self._folder.name)
            executables = [scripts[r // (world_size // hosts.n)] for r in range(world_size)]
        try:
            for p, executable in zip(self.procs, executables, strict=True):
                ctx.set_executable(executable)
                p.start()
        finally:
            ctx.set_executable(sys.executable)
        try:
            self._collect("ready", None)  # idle before anything is timed
        except BaseException:
            self.close()
            raise

    def _collect(self, until: str, on_row: Callable[[Any], None] | None) -> None:
        """Handles messages until every rank has sent `until`; rows go to on_row, progress to self.progress."""
        seen = 0
        deadline = time.monotonic() + self.timeout_s
        while seen < self.world_size:
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

    def run(self, index: int, round_no: int, on_row: Callable[[Any], None]) -> None:
        """Runs size `index` (round `round_no`) on every rank and waits for it.

        Args:
            index: the size's index in the configuration.
            round_no: which round of that size this is.
            on_row: gets each row rank 0 reports.

        Raises:
            RuntimeError: When a rank fails, exits early or does not finish within the timeout.
        """
        for q in self.commands:
            q.put((index, round_no))
        self._collect("ran", on_row)

    def close(self) -> None:
        """Stops the ranks (killing those that do not exit)."""
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
        if self._folder is not None:
            self._folder.cleanup()


def rows_of(run_rank: RunRank, config: Any, world_size: int, sizes: int, *, job: str, env: dict[str, str],
            timeout_s: float, hosts: Any = None) -> list[Any]:
    """Runs every size once on freshly spawned ranks (a bench whose ranks do their own rounds) and collects the
    rows rank 0 reports.

    Args:
        run_rank: the bench's rank body.
        config: every rank's configuration.
        world_size: how many ranks.
        sizes: how many sizes (indices 0 .. sizes-1 are sent in order).
        job: prefix of ATB_OPS_JOB_ID.
        env: variables of this bench for every rank.
        timeout_s: how long any one step may take.
        hosts: the emulated hosts the ranks run on (see Ranks); None: this host.

    Returns:
        The rows, in the order rank 0 reported them.

    Raises:
        RuntimeError: When a rank fails, exits early or does not finish a step within timeout_s.
    """
    rows: list[Any] = []
    ranks = Ranks(run_rank, config, world_size, job=job, env=env, timeout_s=timeout_s, hosts=hosts)
    try:
        for index in range(sizes):
            ranks.run(index, 0, rows.append)
    finally:
        ranks.close()
    return rows


def _scripts_entering(hosts: Any, folder: str) -> list[str]:
    """Per emulated host, an interpreter that runs there: a script that enters the host's network and host-name
    namespaces (nsenter, in this working directory) and runs this Python. Not its mount namespace: the spawned
    rank's queues rebuild their locks from this machine's /dev/shm (the ranks still tell the hosts apart by their
    host names, core/host.h)."""
    scripts = []
    for h in range(hosts.n):
        argv = hosts.nsenter_argv(h, wd=os.getcwd(), own_files=False)
        script = os.path.join(folder, f"python_on_{hosts.names[h]}")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\nexec {' '.join(shlex.quote(a) for a in argv)} -- {shlex.quote(sys.executable)} "
                    '"$@"\n')
        os.chmod(script, 0o755)
        scripts.append(script)
    return scripts


def serve_rank(run_rank: RunRank, rank: int, config: Any, env: dict[str, str], results: Any, commands: Any) -> None:
    """One spawned rank of any bench: sets `env`, runs ``run_rank(rank, config, results, commands)``, and reports a
    failure to the parent as ("error", traceback) before exiting with status 1."""
    os.environ.update(env)
    try:
        run_rank(rank, config, results, commands)
    except BaseException:  # noqa: BLE001 - the parent prints it with the rank
        results.put(("error", f"rank {rank}:\n{traceback.format_exc()}"))
        raise SystemExit(1) from None
