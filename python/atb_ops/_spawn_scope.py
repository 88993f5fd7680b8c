"""The ranks of one ``torch.multiprocessing.spawn`` call are one job, by proof.

A node-local rendezvous with no job id can only guess that the children of one parent are one job, and one
parent may start two jobs (csrc/comm/bootstrap/job_census.h). Where the launching process imported atb_ops,
every ``torch.multiprocessing.spawn`` / ``start_processes`` call hands its children one fresh
``ATB_OPS_JOB_ID``: the children of one call meet, two calls never do, and nobody waits on the census. An id
the user (or a launcher) set is kept; the one ``python -m atb_ops run`` gives a run is narrowed per call, since
a run's script may start two jobs side by side (a harness running two tests at once).
"""

from __future__ import annotations

import functools
import os
import sys
import uuid
from collections.abc import Callable
from typing import Any

_VARIABLE = "ATB_OPS_JOB_ID"
# How the id `python -m atb_ops run` gives a run begins (emulation/launcher.py).
RUN_JOB_PREFIX = "atb_ops-run-"


def _scoped(start: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps torch's start_processes so its children share one new job id."""
    if getattr(start, "_atb_ops_scoped", False):
        return start

    @functools.wraps(start)
    def start_processes(*args: Any, **kwargs: Any) -> Any:
        outer = os.environ.get(_VARIABLE)
        if outer and not outer.startswith(RUN_JOB_PREFIX):
            return start(*args, **kwargs)
        os.environ[_VARIABLE] = (f"{outer}." if outer else "") + "spawn-" + uuid.uuid4().hex
        try:
            return start(*args, **kwargs)
        finally:
            if outer:
                os.environ[_VARIABLE] = outer
            else:
                os.environ.pop(_VARIABLE, None)

    start_processes._atb_ops_scoped = True  # type: ignore[attr-defined]
    return start_processes


def install() -> None:
    """Wraps torch.multiprocessing's start_processes (spawn calls it) once per process."""
    import torch.multiprocessing  # noqa: PLC0415

    spawn_module = sys.modules.get("torch.multiprocessing.spawn")
    if spawn_module is None or not hasattr(spawn_module, "start_processes"):
        return
    wrapped = _scoped(spawn_module.start_processes)
    spawn_module.start_processes = wrapped
    torch.multiprocessing.start_processes = wrapped
