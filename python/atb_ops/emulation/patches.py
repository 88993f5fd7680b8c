"""Makes torch accept NPU device names, the way Ascend's ``torch_npu.contrib.transfer_to_npu`` makes it
accept CUDA names, in the other direction: ``"npu"``/``"npu:N"`` become the CPU or ``cuda:N``.

It wraps torch's factory functions, ``Tensor.to``/``new_*``, ``Module.to``/``to_empty``, ``torch.load``
and torch.distributed's group creation (backend "hccl"), and adds ``Tensor.npu``, ``Tensor.is_npu``
and ``Module.npu``. Only exact NPU names are translated; every other argument passes through as is.
Tensors are never disguised: ``tensor.device`` is where the data really is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from atb_ops.emulation import config, devices

# torch functions that take a device (positionally or as device=/map_location=).
TORCH_FUNCTIONS = (
    "tensor", "as_tensor", "asarray", "scalar_tensor",
    "zeros", "ones", "empty", "full", "eye", "arange", "range", "linspace", "logspace", "empty_strided",
    "rand", "randn", "randint", "randperm", "normal", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "randint_like", "tril_indices", "triu_indices", "frombuffer", "from_file",
    "sparse_coo_tensor", "sparse_csr_tensor", "hann_window", "hamming_window", "bartlett_window",
    "blackman_window", "kaiser_window", "load", "set_default_device",
)  # fmt: skip
TENSOR_METHODS = ("to", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros")
MODULE_METHODS = ("to", "to_empty")
DEVICE_KWARGS = ("device", "map_location", "device_id")
_MARK = "__atb_ops_npu_wrapped__"
_installed = False


def _translate_any(value: Any) -> Any:
    """Translates an NPU name, or the values of a map_location dict; leaves anything else alone."""
    if isinstance(value, dict):
        return {k: devices.translate(v) for k, v in value.items()}
    return devices.translate(value)


def _names_npu(value: Any) -> bool:
    return devices.is_npu_name(value)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wrap(fn: Callable[..., Any], copy_to_npu: bool = False, method_to: bool = False) -> Callable[..., Any]:
    """A wrapper of `fn` that translates NPU names among its positional and device keyword arguments.

    A bare index as the device (``device=0``, or ``tensor.to(0)`` with method_to) names the accelerator,
    which torch_npu makes the NPU: ATB's scripts write ``x.to(torch.npu.current_device())``.
    With copy_to_npu (Tensor.to), moving a CPU tensor "to the NPU" under --device cpu copies it, as a
    host-to-device transfer would, so a script that later writes into one never changes the other.
    """
    if getattr(fn, _MARK, False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        to_npu = False
        if method_to and len(args) > 1 and _is_index(args[1]):
            args = (args[0], devices.real_device(args[1]), *args[2:])
            to_npu = True
        if args:
            named = any(_names_npu(a) for a in args)
            if named:
                args = tuple(devices.translate(a) for a in args)
            to_npu = to_npu or named
        for key in DEVICE_KWARGS:
            if key in kwargs:
                if key == "device" and _is_index(kwargs[key]):
                    kwargs[key] = devices.real_device(kwargs[key])
                    to_npu = True
                    continue
                to_npu = to_npu or _names_npu(kwargs[key])
                kwargs[key] = _translate_any(kwargs[key])
        if copy_to_npu and to_npu and config.emulated_device() == "cpu" and "copy" not in kwargs:
            kwargs["copy"] = True
        return fn(*args, **kwargs)

    setattr(wrapper, _MARK, True)
    return wrapper


def _tensor_npu(self: torch.Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> torch.Tensor:
    """Tensor.npu(device=None): the tensor on the NPU (a copy, as a host-to-device transfer is).

    Args:
        device: None (the current NPU), an index, "npu:N" or torch.device("npu:N").
        non_blocking: Passed to Tensor.to.

    Returns:
        A CPU copy under --device cpu; the tensor on cuda:N under --device cuda (itself if already there).
    """
    from atb_ops.emulation import npu

    index = npu.current_device() if device is None else npu._index_of(device)
    target = devices.real_device(index)
    if target.type == "cpu":
        return self.to(target, non_blocking=non_blocking, copy=True, **kwargs)
    return self.to(target, non_blocking=non_blocking, **kwargs)


def _module_npu(self: torch.nn.Module, device: Any = None) -> torch.nn.Module:
    """Module.npu(device=None): moves parameters and buffers to the NPU (nothing to move on CPU)."""
    from atb_ops.emulation import npu

    index = npu.current_device() if device is None else npu._index_of(device)
    return self.to(devices.real_device(index))


def _is_npu(self: torch.Tensor) -> bool:
    """True for tensors where NPU tensors live here (the CPU, or CUDA under --device cuda)."""
    return self.device.type == devices.real_device_type()


def _cpu_collectives_backend() -> str:
    """The torch.distributed backend NPU-emulating CPU tensors use: atb_ops' own where it is registered."""
    from atb_ops import c10d_backend  # noqa: PLC0415  (the package may still be loading)

    return c10d_backend.NAME if c10d_backend.register() else "gloo"


def _hccl_to_real(backend: Any) -> Any:
    """Backend "hccl" of torch.distributed becomes atb_ops (CPU; it runs on gloo itself where a group spans
    hosts) or nccl (CUDA); others pass through.

    Args:
        backend: what the script passed as ``backend`` ("hccl", "cpu:gloo,npu:hccl", a Backend, ...).

    Returns:
        The backend string torch gets; for a per-device string, the emulated device's entry wins over another
        entry for the same real device.
    """
    if not isinstance(backend, str) or "hccl" not in backend:
        return backend
    real = "nccl" if config.emulated_device() == "cuda" else _cpu_collectives_backend()
    if backend == "hccl":
        return real
    # "cpu:gloo,npu:hccl" style: the npu entry names the emulated device type.
    by_device: dict[str, str] = {}
    plain: list[str] = []
    for part in backend.split(","):
        dev, sep, name = part.partition(":")
        if sep and name == "hccl":
            by_device[devices.real_device_type()] = real
        elif part == "hccl":
            plain.append(real)
        elif sep:
            by_device.setdefault(dev, name)
        else:
            plain.append(part)
    parts = [f"{dev}:{name}" for dev, name in by_device.items()] + plain
    return ",".join(dict.fromkeys(parts))


def _wrap_group_creation(fn: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(fn, _MARK, False):
        return fn
    device_wrapped = _wrap(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            kwargs["backend"] = _hccl_to_real(kwargs["backend"])
        elif args and fn.__name__ == "init_process_group":
            args = (_hccl_to_real(args[0]), *args[1:])
        return device_wrapped(*args, **kwargs)

    setattr(wrapper, _MARK, True)
    return wrapper


def install() -> None:
    """Applies the patches once per process (a second call does nothing)."""
    global _installed
    if _installed:
        return
    for name in TORCH_FUNCTIONS:
        fn = getattr(torch, name, None)
        if fn is not None:
            setattr(torch, name, _wrap(fn))
    for name in TENSOR_METHODS:
        setattr(
            torch.Tensor, name, _wrap(getattr(torch.Tensor, name), copy_to_npu=name == "to", method_to=name == "to")
        )
    for name in MODULE_METHODS:
        setattr(torch.nn.Module, name, _wrap(getattr(torch.nn.Module, name), method_to=name == "to"))
    torch.Tensor.npu = _tensor_npu
    torch.Tensor.is_npu = property(_is_npu)
    torch.nn.Module.npu = _module_npu
    if torch.distributed.is_available():
        import torch.distributed as dist

        for name in ("init_process_group", "new_group"):
            setattr(dist, name, _wrap_group_creation(getattr(dist, name)))
    _installed = True
