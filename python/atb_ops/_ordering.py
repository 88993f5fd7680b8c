"""Call order of atb_ops.distributed on a group: asynchronous calls (``alltoall_single(..., sync_op=False)``) run
in call order on the group's worker thread, and every synchronous call first waits for the asynchronous ones made
before it. Every rank must put its calls on a communicator in one order: a synchronous call made while an earlier
asynchronous one still waits on the worker would reach the communicator first on some ranks and second on others
(a mismatch, or two calls of one kind from different iterations paired with each other's data)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

_executors: dict[str, ThreadPoolExecutor] = {}
_last: dict[str, Future] = {}  # per group name: its latest asynchronous call
_lock = threading.Lock()


def pending() -> bool:
    """Whether any asynchronous call may still be running (cheap: a dict's truth value)."""
    return bool(_last)


def submit(group_name: str, fn: Callable[[], object]) -> Future:
    """Runs fn on the group's worker thread, after the group's earlier asynchronous calls.

    Args:
        group_name: The group's name (torch.distributed's group_name).
        fn: The call.

    Returns:
        Its future.
    """
    with _lock:
        executor = _executors.get(group_name)
        if executor is None:
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"atb_ops-{group_name}")
            _executors[group_name] = executor
        future = executor.submit(fn)
        _last[group_name] = future
    return future


def settle(group_name: str | None) -> None:
    """Waits until the asynchronous calls made so far have run: the group's, or (None) every group's, as an
    autograd backward, which knows its communicator but not its group, needs. Their errors stay with their Tasks.

    Args:
        group_name: The group's name, or None for all groups.
    """
    with _lock:
        if group_name is None:
            previous = list(_last.values())
            _last.clear()
        else:
            one = _last.pop(group_name, None)
            previous = [] if one is None else [one]
    for future in previous:
        future.exception()  # waits; its error belongs to its own Task.wait()
