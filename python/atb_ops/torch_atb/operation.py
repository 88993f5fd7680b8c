"""torch_atb.Operation over ``atb_ops.Operation`` (OperationTorch's methods through pybind11, as ATB's own
torch_atb is a pybind11 module): one implementation of each operator serves both of ATB's Python surfaces.

``Operation(param)`` creates the operator of the param and hands it the param's JSON
(its checks raise here, at creation, as ATB's CreateOperation does); ``forward`` is its ``execute``.
``Prof`` keeps each operator's forward times per thread, as ATB's torch_atb does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import torch

from atb_ops.torch_atb.params import PARAM_TYPES, CommParam

MAX_RUN_TIMES = 1000  # ATB keeps the last 1000 times per operator


class Prof:
    """Forward times per operator name, per thread (``Prof.get_prof_stats().get_run_time_stats(name)``)."""

    _local = threading.local()

    def __init__(self) -> None:
        self._run_times: dict[str, list[int]] = {}

    @staticmethod
    def get_prof_stats() -> Prof:
        """This thread's statistics."""
        stats = getattr(Prof._local, "stats", None)
        if stats is None:
            stats = Prof._local.stats = Prof()
        return stats

    def set_run_time(self, op_name: str, run_time_us: int) -> None:
        """Records one forward's time in microseconds (the last MAX_RUN_TIMES are kept)."""
        times = self._run_times.setdefault(op_name, [])
        if len(times) >= MAX_RUN_TIMES:
            del times[0]
        times.append(run_time_us)

    def get_run_time_stats(self, op_name: str) -> list[int]:
        """The recorded forward times of operator `op_name` in microseconds, oldest first ([] if none)."""
        return list(self._run_times.get(op_name, []))


_buffer_size = 0


def set_buffer_size(bytes: int) -> None:  # noqa: A002  (ATB's keyword name)
    """Accepted for compatibility: ATB's default workspace size. The operators here need no workspace.

    Args:
        bytes: Workspace size in bytes (>= 0).

    Raises:
        ValueError: For a negative size.
    """
    global _buffer_size
    if not isinstance(bytes, int) or bytes < 0:
        raise ValueError(f"set_buffer_size: expected a size in bytes >= 0, got {bytes!r}")
    _buffer_size = bytes


def _operation_class() -> Any:
    import atb_ops

    return atb_ops.Operation


class Operation:
    """An ATB operation made from a param object: ``Operation(AllGatherParam(...)).forward([x])``."""

    def __init__(self, param: CommParam) -> None:
        """Creates the operator and sets its param.

        Args:
            param: One of AllGatherParam, AllReduceParam, BroadcastParam, ReduceScatterParam,
                ReduceScatterVParam, AllToAllParam, LinearParallelParam.

        Raises:
            TypeError: For any other object.
            RuntimeError: When the operator rejects the param (message starting with ATB's error name,
                e.g. ERROR_INVALID_PARAM), or does not exist in this build.
        """
        if not isinstance(param, PARAM_TYPES):
            names = ", ".join(t.__name__ for t in PARAM_TYPES)
            raise TypeError(f"torch_atb.Operation: expected one of {names}; got {type(param).__name__}")
        self._param_json = json.dumps(param.to_json())  # a snapshot: later changes to param do not apply
        self._input_num, self._output_num = param.io_numbers()
        self._op = _operation_class()(param.OP_NAME)
        self._op.set_param(self._param_json)
        self._name = str(self._op.name())

    @property
    def name(self) -> str:
        """The operator's name, e.g. "AllGatherOperation"."""
        return self._name

    @property
    def input_num(self) -> int:
        """How many tensors forward() takes."""
        return self._input_num

    @property
    def output_num(self) -> int:
        """How many tensors forward() returns."""
        return self._output_num

    def forward(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Runs the operation.

        Args:
            tensors: The input tensors, input_num of them.

        Returns:
            The output tensors, output_num of them.

        Raises:
            TypeError: When `tensors` is not a list of tensors.
            RuntimeError: When the operator rejects the inputs or the communication fails (message
                starting with ATB's error name).
        """
        if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in tensors):
            raise TypeError(f"{self._name}.forward: expected a list of Tensors, got {type(tensors).__name__}")
        start = time.perf_counter_ns()
        outputs = self._op.execute(list(tensors))
        Prof.get_prof_stats().set_run_time(self._name, (time.perf_counter_ns() - start) // 1000)
        return list(outputs)

    def __repr__(self) -> str:
        return f"op name: {self._name}, input_num: {self._input_num}, output_num: {self._output_num}"
