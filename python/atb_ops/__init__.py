"""atb_ops: ATB-compatible alltoallv and collectives on Ascend (HCCL), CUDA (NCCL) and CPU ranks.

Importing the package loads the native core ``atb_ops._C``, which registers the TorchScript class
``torch.classes.OperationTorch.OperationTorch`` (ATB's torch binding) and the communication backends.
"""

from __future__ import annotations

import atexit

import torch

from atb_ops import _C, _nccl_bootstrap
from atb_ops._gloo_groups import resolve_group as _resolve_group

__all__ = ["OperationTorch", "backends", "clear_communicators", "validate_layout"]
__version__ = "0.1.0"

_C.set_group_resolver(_resolve_group)
_nccl_bootstrap.install(_C)
# Communicators hold process groups and shared mappings: drop them while Python is still whole.
atexit.register(_C.clear_communicators)

OperationTorch = torch.classes.OperationTorch.OperationTorch
backends = _C.backends
clear_communicators = _C.clear_communicators
validate_layout = _C.validate_layout
