"""A multiprocessing Manager's server process takes no rank, and says so.

Ranks that only their parent process groups into a job (no job id) wait until each sibling that has atb_ops
loaded has claimed a rank or declared it takes none (csrc/comm/bootstrap/job_census.h): a sibling that loaded
atb_ops may still create a communicator, and may belong to another job. A Manager started by a parent that
imported atb_ops has it loaded too (fork copies it; spawn re-imports the parent's main module), but only ever
serves shared objects: its server declares that before it starts serving.
"""

from __future__ import annotations

import functools
import multiprocessing.managers
from collections.abc import Callable
from typing import Any


def _declaring(run_server: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps BaseManager._run_server (the function the Manager's process runs) to declare no rank first."""

    @functools.wraps(run_server)
    def run(cls: type, *args: Any, **kwargs: Any) -> Any:
        from atb_ops import _C  # noqa: PLC0415

        try:
            _C.declare_no_rank()
        except RuntimeError:
            pass  # no private folder to write in: ranks then wait for this process as for any other
        return run_server(cls, *args, **kwargs)

    run._atb_ops_declaring = True  # type: ignore[attr-defined]
    return run


def install() -> None:
    """Wraps the Manager server's entry point once per process."""
    entry = multiprocessing.managers.BaseManager.__dict__.get("_run_server")
    if not isinstance(entry, classmethod) or getattr(entry.__func__, "_atb_ops_declaring", False):
        return
    multiprocessing.managers.BaseManager._run_server = classmethod(_declaring(entry.__func__))  # type: ignore[method-assign]
