"""NPU device names and where they really live: ``"npu:N"`` is the CPU, or ``"cuda:N"``.

Nothing pretends: a tensor "on npu:1" is a CPU tensor (``--device cpu``) or a tensor on ``cuda:1``
(``--device cuda``), and it prints as such. Only the names scripts pass in are translated.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from atb_ops.emulation import config

_NPU_NAME = re.compile(r"npu(?::(\d+))?\Z")


def device_count() -> int:
    """How many NPUs the emulation has: ATB_OPS_NPU_COUNT (default 8) on CPU, the GPUs on CUDA.

    Returns:
        The number of emulated NPUs.
    """
    if config.emulated_device() == "cuda":
        return torch.cuda.device_count()
    return config.cpu_npu_count()


def check_index(index: int) -> int:
    """Checks an NPU index against the emulated devices.

    Args:
        index: An NPU index (the N of "npu:N").

    Returns:
        The index.

    Raises:
        RuntimeError: When the index is negative or not below device_count(); under --device cuda the
            message names both the NPU asked for and the GPUs there are (NCCL needs one GPU per rank).
    """
    mode = config.emulated_device()
    count = device_count()
    if 0 <= index < count:
        return index
    if mode == "cuda":
        raise RuntimeError(
            f"atb_ops NPU emulation (--device cuda): npu:{index} needs CUDA device {index}, but "
            f"torch.cuda.device_count() is {count}; each rank needs a GPU of its own (NCCL cannot run two "
            f"ranks on one GPU), so run at most {count} rank(s) here or use --device cpu"
        )
    raise RuntimeError(
        f"atb_ops NPU emulation (--device cpu): npu:{index} does not exist, device_count() is {count} "
        f"(set {config.COUNT_ENV} to emulate more NPUs)"
    )


def npu_index(device: Any) -> int | None:
    """The index named by an NPU device argument.

    Args:
        device: An int, "npu", "npu:N", or a torch.device of type "npu".

    Returns:
        N, or None for "npu" without an index.

    Raises:
        ValueError: When `device` names no NPU (e.g. "cuda:0", a float, a negative int).
    """
    if isinstance(device, bool):
        raise ValueError(f"not an NPU device: {device!r}")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"not an NPU device: {device!r} (negative index)")
        return device
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"not an NPU device: {device!r}")
        return device.index
    if isinstance(device, str):
        match = _NPU_NAME.match(device.strip())
        if match is None:
            raise ValueError(f"not an NPU device: {device!r} (expected 'npu' or 'npu:N')")
        return None if match.group(1) is None else int(match.group(1))
    raise ValueError(f"not an NPU device: {device!r}")


def is_npu_name(device: Any) -> bool:
    """True for the NPU device names the emulation translates: "npu", "npu:N", torch.device("npu...")."""
    if isinstance(device, torch.device):
        return device.type == "npu"
    return isinstance(device, str) and _NPU_NAME.match(device.strip()) is not None


def real_device(index: int | None) -> torch.device:
    """The device that holds the tensors of NPU `index` (None: the current NPU).

    Args:
        index: An NPU index, or None.

    Returns:
        torch.device("cpu"), or torch.device("cuda", index) (plain "cuda", the current GPU, for None).

    Raises:
        RuntimeError: When the index does not exist (see check_index).
    """
    if index is not None:
        check_index(index)
    if config.emulated_device() == "cuda":
        return torch.device("cuda") if index is None else torch.device("cuda", index)
    return torch.device("cpu")


def translate(device: Any) -> Any:
    """Replaces an NPU device name by the real device; anything else is returned unchanged.

    Args:
        device: Any argument a script passes where torch expects a device.

    Returns:
        For "npu"/"npu:N" a str ("cpu", "cuda", "cuda:N"), for torch.device("npu...") a torch.device;
        otherwise `device` itself.

    Raises:
        RuntimeError: When it names an NPU that does not exist.
    """
    if not is_npu_name(device):
        return device
    real = real_device(npu_index(device))
    return real if isinstance(device, torch.device) else str(real)


def real_device_type() -> str:
    """The device type NPU tensors have here: "cpu" or "cuda"."""
    return config.emulated_device()
