"""Streams and events of the emulated NPU under ``--device cpu``.

CPU work is synchronous, so a stream has nothing to wait for and an event is a timestamp. Under
``--device cuda`` torch.npu uses torch.cuda's Stream and Event instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch


class Event:
    """An NPU event on the CPU: ``record`` takes a timestamp, ``elapsed_time`` measures between two."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._recorded_ns: int | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Marks the point in time (CPU work before it has completed)."""
        self._recorded_ns = time.perf_counter_ns()

    def query(self) -> bool:
        """True: CPU work is complete when the call returns."""
        return True

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def wait(self, stream: Stream | None = None) -> None:
        """Nothing to wait for."""

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event's record() to `end_event`'s.

        Args:
            end_event: An event recorded after this one.

        Returns:
            The time between the two records in milliseconds.

        Raises:
            RuntimeError: When either event was not recorded.
        """
        if self._recorded_ns is None or end_event._recorded_ns is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end_event._recorded_ns - self._recorded_ns) / 1e6


class Stream:
    """An NPU stream on the CPU: work runs in order as it is called, so every wait is immediate."""

    def __init__(self, device: object = None, priority: int = 0) -> None:
        self.device = torch.device("cpu")
        self.priority = priority

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def query(self) -> bool:
        """True: nothing is pending."""
        return True

    def wait_stream(self, stream: Stream) -> None:
        """Nothing to wait for."""

    def wait_event(self, event: Event) -> None:
        """Nothing to wait for."""

    def record_event(self, event: Event | None = None) -> Event:
        """Records `event` (a new one if None) and returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __repr__(self) -> str:
        return "<atb_ops emulated npu Stream on cpu>"


_DEFAULT_STREAM = Stream()
_current_stream = _DEFAULT_STREAM


def current_stream(device: object = None) -> Stream:
    """The stream set by ``torch.npu.stream``/``set_stream``, else the default stream."""
    return _current_stream


def default_stream(device: object = None) -> Stream:
    """The one default stream."""
    return _DEFAULT_STREAM


def set_stream(stream: Stream) -> None:
    """Makes `stream` the current stream."""
    global _current_stream
    _current_stream = stream


@contextmanager
def stream(s: Stream | None) -> Iterator[None]:
    """``with torch.npu.stream(s):`` makes `s` current inside the block (None: no change)."""
    if s is None:
        yield
        return
    previous = current_stream()
    set_stream(s)
    try:
        yield
    finally:
        set_stream(previous)
