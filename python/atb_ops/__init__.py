"""atb_ops: ATB-compatible alltoallv and collectives on Ascend (HCCL), CUDA (NCCL) and CPU ranks.

Importing the package loads the native core ``atb_ops._C``, which registers the TorchScript class
``torch.classes.OperationTorch.OperationTorch`` (ATB's torch binding), the ``torch.ops.atb_ops``
collectives and the communication backends.
"""

from __future__ import annotations

import atexit

import torch

from atb_ops import _C, _ops, distributed, quant
from atb_ops._gloo_groups import resolve_group as _resolve_gloo_group
from atb_ops.errors import AtbError

__all__ = [
    "AtbError",
    "OperationTorch",
    "backends",
    "clear_communicators",
    "distributed",
    "quant",
    "validate_layout",
]
__version__ = "0.1.0"

_C.set_group_resolver(_resolve_gloo_group)
# Communicators hold process groups and shared mappings: drop them while Python is still whole.
atexit.register(_C.clear_communicators)

OperationTorch = torch.classes.OperationTorch.OperationTorch
backends = _C.backends
clear_communicators = _C.clear_communicators
validate_layout = _C.validate_layout
del _ops  # imported for its registrations (fake kernels, autograd)
