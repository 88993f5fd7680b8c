"""``torch.npu`` and ``torch_npu.npu`` of the emulation: the device API that ATB scripts call.

Under ``--device cpu`` there are ATB_OPS_NPU_COUNT NPUs (default 8), all of them the CPU; under
``--device cuda`` NPU N is GPU N, and ``set_device`` refuses an NPU that has no GPU. Names that the
emulation does not provide raise AttributeError saying so.
"""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace, TracebackType
from typing import Any

import torch

from atb_ops.emulation import config, devices, streams

# Per thread, as NPU and CUDA runtimes keep it: ATB's commMode 1 scripts give each rank thread its own device, and
# a new thread starts on device 0.
_current = threading.local()


def _index_of(device: Any) -> int:
    """The NPU index named by a device argument; None, "npu" or an unindexed device: the current one."""
    if device is None:
        return current_device()
    if isinstance(device, torch.device) and device.type == devices.real_device_type():
        index = device.index  # torch.device("cuda:1") under --device cuda, "cpu" under --device cpu
    else:
        try:
            index = devices.npu_index(device)
        except ValueError as err:
            raise ValueError(f"torch.npu: {err}") from None
    return current_device() if index is None else devices.check_index(index)


def is_available() -> bool:
    """True: the emulated NPUs are always there (under --device cuda only when torch sees a GPU)."""
    if config.emulated_device() == "cuda":
        return torch.cuda.is_available()
    return True


def is_initialized() -> bool:
    """True: there is nothing to initialise."""
    return True


def init() -> None:
    """Nothing to initialise."""


def device_count() -> int:
    """The number of emulated NPUs: ATB_OPS_NPU_COUNT (default 8) on CPU, the GPU count on CUDA."""
    return devices.device_count()


def set_device(device: int | str | torch.device) -> None:
    """Selects the current NPU, like torch_npu.npu.set_device.

    Args:
        device: An index, "npu:N" ("npu" keeps the current one) or torch.device("npu:N").

    Raises:
        RuntimeError: When NPU N does not exist; under --device cuda when N >= torch.cuda.device_count()
            (the message names both numbers).
        ValueError: When `device` names no NPU.
    """
    index = _index_of(device)
    if config.emulated_device() == "cuda":
        torch.cuda.set_device(index)
    _current.index = index


def current_device() -> int:
    """The index of this thread's current NPU (0 until set_device is called in this thread)."""
    if config.emulated_device() == "cuda" and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return getattr(_current, "index", 0)


def synchronize(device: Any = None) -> None:
    """Waits for the NPU's work: nothing to wait for on CPU, torch.cuda.synchronize on CUDA."""
    index = _index_of(device)
    if config.emulated_device() == "cuda":
        torch.cuda.synchronize(index)


def get_device_name(device: Any = None) -> str:
    """The NPU's name: ATB_OPS_NPU_NAME, else "Ascend910B (atb_ops emulation on ...)".

    It contains "Ascend910B" and is longer than 10 characters, which is what ATB's SoC checks ask
    for, and it says where the tensors really are.

    Args:
        device: None (the current NPU), an index, "npu:N" or torch.device("npu:N").

    Returns:
        The name.

    Raises:
        RuntimeError: When the NPU does not exist.
    """
    index = _index_of(device)
    override = os.environ.get(config.NAME_ENV)
    if override:
        return override
    if config.emulated_device() == "cuda":
        return f"Ascend910B (atb_ops emulation on cuda:{index}, {torch.cuda.get_device_name(index)})"
    return "Ascend910B (atb_ops emulation on cpu)"


def get_device_properties(device: Any = None) -> Any:
    """Properties of the NPU: its name and total_memory (host memory on CPU, the GPU's on CUDA)."""
    index = _index_of(device)
    if config.emulated_device() == "cuda":
        props = torch.cuda.get_device_properties(index)
        return SimpleNamespace(name=get_device_name(index), total_memory=props.total_memory, cuda=props)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return SimpleNamespace(name=get_device_name(index), total_memory=total)


def set_compile_mode(jit_compile: bool = False, **_: Any) -> None:
    """Accepted and ignored: there is no operator compiler to configure."""


def is_bf16_supported() -> bool:
    """True: bfloat16 works on the CPU and on recent GPUs alike."""
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes autocast may use on the NPU."""
    return [torch.float16, torch.bfloat16]


def _is_in_bad_fork() -> bool:
    """False: the emulated device survives fork (torch.manual_seed asks before seeding it)."""
    return False


def manual_seed(seed: int) -> None:
    """Seeds the generator NPU tensors are drawn from (the CPU's, or the current GPU's)."""
    if config.emulated_device() == "cuda":
        torch.cuda.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds the generators of every NPU (torch.manual_seed calls this too)."""
    if config.emulated_device() == "cuda":
        torch.cuda.manual_seed_all(seed)
    else:
        torch.default_generator.manual_seed(int(seed))


def empty_cache() -> None:
    """Releases cached device memory (torch.cuda.empty_cache on CUDA; nothing on CPU)."""
    if config.emulated_device() == "cuda":
        torch.cuda.empty_cache()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors on the NPU: torch.cuda's count on CUDA; 0 on CPU (not tracked)."""
    if config.emulated_device() == "cuda":
        return torch.cuda.memory_allocated(_index_of(device))
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """Peak of memory_allocated: torch.cuda's count on CUDA; 0 on CPU (not tracked)."""
    if config.emulated_device() == "cuda":
        return torch.cuda.max_memory_allocated(_index_of(device))
    return 0


def reset_peak_memory_stats(device: Any = None) -> None:
    """Resets max_memory_allocated (CUDA only; nothing is tracked on CPU)."""
    if config.emulated_device() == "cuda":
        torch.cuda.reset_peak_memory_stats(_index_of(device))


def current_stream(device: Any = None) -> Any:
    """The current stream: an always-idle CPU stream, or torch.cuda.current_stream on CUDA."""
    if config.emulated_device() == "cuda":
        return torch.cuda.current_stream(_index_of(device))
    return streams.current_stream()


def default_stream(device: Any = None) -> Any:
    """The default stream: an always-idle CPU stream, or torch.cuda.default_stream on CUDA."""
    if config.emulated_device() == "cuda":
        return torch.cuda.default_stream(_index_of(device))
    return streams.default_stream()


def stream(s: Any) -> Any:
    """``with torch.npu.stream(s):`` (torch.cuda.stream on CUDA)."""
    if config.emulated_device() == "cuda":
        return torch.cuda.stream(s)
    return streams.stream(s)


def set_stream(s: Any) -> None:
    """Makes `s` the current stream (torch.cuda.set_stream on CUDA)."""
    if config.emulated_device() == "cuda":
        torch.cuda.set_stream(s)
    else:
        streams.set_stream(s)


class device:  # noqa: N801  (torch.npu.device, like torch.cuda.device)
    """``with torch.npu.device(n):`` makes NPU n current inside the block."""

    def __init__(self, device: Any) -> None:
        self._index = None if device is None else _index_of(device)
        self._previous = 0

    def __enter__(self) -> None:
        self._previous = current_device()
        if self._index is not None:
            set_device(self._index)

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._index is not None:
            set_device(self._previous)


def __getattr__(name: str) -> Any:
    """Stream and Event follow the emulated device; any other missing name says it is not emulated."""
    if name in ("Stream", "Event"):
        if config.emulated_device() == "cuda":
            return getattr(torch.cuda, name)
        return getattr(streams, name)
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"torch.npu.{name} is not provided by the atb_ops NPU emulation (see docs/emulation.md for what is)"
    )
