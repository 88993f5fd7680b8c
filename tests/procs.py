"""Rank processes started apart from the pool: each a fresh interpreter running a snippet, so a crash, an
abort or a hang there cannot take pytest down, and every exit status is returned to be checked; and the
environment of ranks (a job's variables left out, or set for a block and restored)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Variables that scope a job: a parent-scoped test must not inherit pytest's.
JOB_VARIABLES = ("ATB_OPS_JOB_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE")


@dataclass
class Exit:
    """One finished rank process."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def last_line(self) -> str:
        lines = self.stdout.strip().splitlines()
        return lines[-1] if lines else ""


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without any job scope, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in JOB_VARIABLES}
    env.update(extra)
    return env


@contextmanager
def environment(env: dict[str, str] | None) -> Iterator[None]:
    """Sets variables of this process for the block (atb_ops reads them when a communicator or a process is
    made), then restores each to what it was, unset included."""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start(code: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Starts `code` (dedented) in a fresh interpreter with argv[1:] = args."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def finish(procs: list[subprocess.Popen], timeout_s: float) -> list[Exit]:
    """Waits for every process (killing any still running after timeout_s) and returns how each ended."""
    began = time.monotonic()
    exits = []
    for p in procs:
        left = max(0.1, timeout_s - (time.monotonic() - began))
        try:
            out, err = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += f"\n[tests.procs] killed after {timeout_s} s"
        exits.append(Exit(p.returncode, out, err, time.monotonic() - began))
    return exits


def run_ranks(code: str, world_size: int, env: dict[str, str], timeout_s: float = 120,
              args: list[str] | None = None) -> list[Exit]:
    """Runs `code` as ranks 0..world_size-1 (argv[1] is the rank) and returns every rank's exit."""
    procs = [start(code, [str(r), *(args or [])], env) for r in range(world_size)]
    return finish(procs, timeout_s)


def interrupt_after(proc: subprocess.Popen, seconds: float) -> float:
    """Sends SIGINT to proc after `seconds`; returns the monotonic time it was sent."""
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    return time.monotonic()
