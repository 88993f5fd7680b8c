"""Turns the emulation on in this process: what ``import torch_npu`` does under the launcher.

It names torch's PrivateUse1 device "npu" (so ``torch.device("npu:1")`` parses, as with torch_npu),
registers ``torch.npu``, and applies the device-name patches. No tensor is ever created on the
PrivateUse1 device: every NPU name is translated to the CPU or CUDA before torch sees it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from types import ModuleType

import torch

from atb_ops.emulation import config, npu, operation_class, patches

_active = False


def _name_npu_device() -> None:
    current = torch._C._get_privateuse1_backend_name()
    if current == "npu":
        return
    if current != "privateuseone":
        raise RuntimeError(
            f"atb_ops NPU emulation: torch's PrivateUse1 device is already named {current!r} by another "
            "extension; the emulation cannot name it 'npu'"
        )
    torch.utils.rename_privateuse1_backend("npu")


def _register_torch_npu(module: ModuleType) -> None:
    existing = getattr(torch, "npu", None)
    if existing is module:
        return
    if existing is not None:
        raise RuntimeError(
            f"atb_ops NPU emulation: torch.npu already exists ({existing!r}); a real torch_npu is loaded in "
            "this process, and the emulation never shadows it"
        )
    torch._register_device_module("npu", module)


def activate() -> None:
    """Activates the emulation once per process.

    Raises:
        RuntimeError: When a real NPU stack (or another PrivateUse1 extension) is already loaded.
        ValueError: When ATB_OPS_NPU_EMULATION holds an unknown device.
    """
    global _active
    if _active:
        return
    device = config.emulated_device()  # validates the variable before anything changes
    _name_npu_device()
    _register_torch_npu(npu)
    patches.install()
    operation_class.install()
    if device == "cpu":
        _load_hccl_runner()
    _active = True


def _load_hccl_runner() -> None:
    """Loads $ATB_HOME_PATH/lib/libatb.so where the build made it: backend "hccl" (and "lccl") on CPU tensors
    then runs through atb_ops' HCCL backend over HCCL's C API on CPU, as on an NPU through libhccl. Without
    it they run on shm."""
    home = os.environ.get(config.HOME_ENV, "")
    runner = os.path.join(home, "lib", "libatb.so")
    if home and os.path.isfile(runner):
        ctypes.CDLL(runner)


def is_active() -> bool:
    """True once activate() has run in this process."""
    return _active and sys.modules.get("torch.npu") is npu
