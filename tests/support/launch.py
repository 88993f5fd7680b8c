"""The one way tests start rank processes apart from the session's pool (tests/support/rankpool.py), and learn how
each one ended.

Two kinds of rank:

- a fresh interpreter running a snippet, or a program (a compiled C/C++ rank): `start`, `start_program`,
  `finish`, `run_ranks`, `run_programs`. A crash, an abort or a hang there cannot take pytest down; every exit
  status comes back (`Exit`) for the test to check.
- a function of a test module in a process of multiprocessing's spawn context, reporting on a queue:
  `spawn` (the test drives the processes: kills one, reads their exit codes) and `run_spawned` (run to the end;
  every rank's report and exit status checked).
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atb_ops._launch import free_port
from tests.support.paths import REPO_ROOT

__all__ = ["Exit", "Spawned", "finish", "free_port", "interrupt_after", "run_programs", "run_ranks", "run_spawned",
           "spawn", "start", "start_program"]


@dataclass
class Exit:
    """One finished rank process."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def last_line(self) -> str:
        """The last line of its stdout ("" when it printed nothing): where rank programs put their report."""
        lines = self.stdout.strip().splitlines()
        return lines[-1] if lines else ""


# ------------------------------------------------------------------ fresh interpreters and programs


def start_program(argv: Sequence[str | Path], env: dict[str, str], cwd: str | Path | None = None) -> subprocess.Popen:
    """Starts a rank process with its output captured as text.

    Args:
        argv: the program and its arguments.
        env: its whole environment.
        cwd: its working directory (None: this process's).

    Returns:
        The running process; hand it to `finish`.
    """
    return subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd)


def start(code: str, args: Sequence[str], env: dict[str, str]) -> subprocess.Popen:
    """Starts `code` (dedented) in a fresh interpreter, from the checkout (so `tests.*` imports), argv[1:] = args.

    Args:
        code: the rank's program.
        args: its arguments.
        env: its whole environment.

    Returns:
        The running process; hand it to `finish`.
    """
    return start_program([sys.executable, "-c", textwrap.dedent(code), *args], env, cwd=REPO_ROOT)


def finish(procs: Sequence[subprocess.Popen], timeout_s: float) -> list[Exit]:
    """Waits for every process, killing any still running once timeout_s have passed since the call.

    Args:
        procs: processes from `start` or `start_program`.
        timeout_s: seconds for all of them together.

    Returns:
        How each ended, in the order given (a killed one has a negative returncode and says so in its stderr).
    """
    began = time.monotonic()
    exits = []
    for p in procs:
        left = max(0.1, timeout_s - (time.monotonic() - began))
        try:
            out, err = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += f"\n[tests.support.launch] killed after {timeout_s} s"
        exits.append(Exit(p.returncode, out, err, time.monotonic() - began))
    return exits


def run_ranks(code: str, world_size: int, env: dict[str, str], timeout_s: float = 120,
              args: Sequence[str] | None = None) -> list[Exit]:
    """Runs `code` as ranks 0..world_size-1 of fresh interpreters (argv[1] is the rank, then `args`).

    Returns:
        Every rank's exit, in rank order.
    """
    procs = [start(code, [str(r), *(args or [])], env) for r in range(world_size)]
    return finish(procs, timeout_s)


def run_programs(argv_of_rank: Callable[[int], Sequence[str | Path]], world_size: int, env: dict[str, str],
                 timeout_s: float, cwd: str | Path | None = None) -> list[Exit]:
    """Runs one program per rank, all at once.

    Args:
        argv_of_rank: rank -> that rank's command line.
        world_size: how many ranks.
        env: their environment.
        timeout_s: seconds for all of them together.
        cwd: their working directory (None: this process's).

    Returns:
        Every rank's exit, in rank order.
    """
    return finish([start_program(argv_of_rank(r), env, cwd) for r in range(world_size)], timeout_s)


def interrupt_after(proc: subprocess.Popen, seconds: float) -> float:
    """Sends SIGINT (Ctrl-C) to proc after `seconds`.

    Returns:
        The monotonic time it was sent.
    """
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    return time.monotonic()


# ------------------------------------------------------------------ functions in spawned processes


@dataclass
class Spawned:
    """Processes running a function of a test module (spawn context), and the queue they report on."""

    procs: list[mp.Process]
    reports: Any  # a multiprocessing Queue of the spawn context

    def stop(self) -> None:
        """Kills those still running and reaps every one (their exitcode is then set)."""
        for p in self.procs:
            if p.is_alive():
                p.kill()
            p.join(timeout=10)


def spawn(target: Callable[..., None], args_of_process: Sequence[tuple], daemon: bool = True) -> Spawned:
    """Starts target(*args_of_process[i], reports) in process i.

    Args:
        target: a module-level function (spawn imports it by name in the child).
        args_of_process: one tuple of arguments per process.
        daemon: whether a process still running when pytest exits is killed with it.

    Returns:
        The processes and their report queue; `stop` them when done.
    """
    ctx = mp.get_context("spawn")
    reports = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, reports), daemon=daemon) for args in args_of_process]
    for p in procs:
        p.start()
    return Spawned(procs, reports)


def run_spawned(target: Callable[..., None], world_size: int, args: tuple, timeout_s: float) -> list[Any]:
    """Runs target(rank, world_size, *args, reports) on every rank; each puts (rank, error, value) once, error ""
    when it succeeded (atb_ops._launch.run_ranks' protocol), then exits.

    Returns:
        Every rank's value, in rank order.

    Raises:
        AssertionError: naming every rank that reported an error, did not report within timeout_s, or exited
            with a status other than 0 (a crash at interpreter exit is a failure too).
    """
    ranks = spawn(target, [(r, world_size, *args) for r in range(world_size)], daemon=False)
    got: dict[int, tuple[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(got) < world_size:
            try:
                rank, error, value = ranks.reports.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            got[rank] = (error, value)
        # Reports first, then the exits: a child flushing its queue at exit would wait for a reader forever. A rank
        # that never reported is hung or dead: no use waiting for it.
        for p in ranks.procs if len(got) == world_size else []:
            p.join(timeout=30)
    finally:
        ranks.stop()
    problems = [f"rank {r} did not report within {timeout_s} s" for r in range(world_size) if r not in got]
    problems += [f"rank {r} failed: {error}" for r, (error, _) in sorted(got.items()) if error]
    problems += [f"rank {r} exited with status {p.exitcode}" for r, p in enumerate(ranks.procs) if p.exitcode != 0]
    assert not problems, "\n".join(problems)
    return [got[r][1] for r in range(world_size)]
