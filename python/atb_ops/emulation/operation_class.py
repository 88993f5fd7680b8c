"""``torch.classes.OperationTorch.OperationTorch`` under the emulation: the same operator through pybind11.

ATB's scripts construct their operators with ``torch.classes.OperationTorch.OperationTorch(name)`` and call
its methods from Python. A TorchScript class method called from Python goes through TorchScript's argument
matching (schema lookup, a c10::List per tensor list, an IValue stack): about 2.6 us per call on the 2-core host
measured (1 KiB AllGather, world size 1: 3.5 us against 0.9 us), more than the collective itself. Under the
emulation nothing ever hands the object to TorchScript code, so ``torch.classes.OperationTorch`` answers with
``atb_ops.Operation``: the same C++ object (OperationBinding), method for method (set_param, update_param,
set_varaintpack_param, infer_shape, setup, execute, execute_out, execute_sync, set_tensor_list,
execute_split_thread, name), the same RuntimeError messages; an argument of the wrong Python type raises
TypeError instead of TorchScript's RuntimeError. ``ATB_OPS_TORCHSCRIPT_CLASS=1`` keeps the TorchScript class.
"""

from __future__ import annotations

from typing import Any

import torch

from atb_ops.emulation import config

NAMESPACE = "OperationTorch"


class _OperationTorchNamespace:
    """What ``torch.classes.OperationTorch`` returns: ``OperationTorch`` is atb_ops.Operation, any other name
    is looked up among the TorchScript classes of the namespace as before."""

    def __init__(self, fast: type) -> None:
        self.OperationTorch = fast

    def __getattr__(self, name: str) -> Any:
        return getattr(torch._classes._ClassNamespace(NAMESPACE), name)


def install() -> bool:
    """Makes ``torch.classes.OperationTorch.OperationTorch`` the pybind11 class, unless
    ATB_OPS_TORCHSCRIPT_CLASS=1; returns whether it did."""
    if config.keeps_torchscript_class():
        return False
    import atb_ops

    # torch.classes resolves namespaces in its module __getattr__: an attribute of its own comes first.
    setattr(torch.classes, NAMESPACE, _OperationTorchNamespace(atb_ops.Operation))
    return True
