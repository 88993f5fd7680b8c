"""The ranks of one ``torch.multiprocessing.spawn`` call are one job, by proof.

A node-local rendezvous with no job id can only guess that the children of one parent are one job, and one
parent may start two jobs (csrc/comm/bootstrap/job_census.h). Where the launching process imported atb_ops,
every ``torch.multiprocessing.spawn`` / ``start_processes`` call hands its children one fresh
``ATB_OPS_JOB_ID`` (unless the environment has one already): the children of one call meet, two calls never do,
and nobody waits on the census.
"""

from __future__ import annotations

import functools
import os
import sys
import uuid
from collections.abc import Callable
from typing import Any

_VARIABLE = "ATB_OPS_JOB_ID"


def _scoped(start: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps torch's start_processes so its children share one new job id."""
    if getattr(start, "_atb_ops_scoped", False):
        return start

    @functools.wraps(start)
    def start_processes(*args: Any, **kwargs: Any) -> Any:
        if os.environ.get(_VARIABLE):
            return start(*args, **kwargs)
        os.environ[_VARIABLE] = "spawn-" + uuid.uuid4().hex
        try:
            return start(*args, **kwargs)
        finally:
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
