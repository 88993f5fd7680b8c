"""ATB 8.x's Python API (``torch_atb``) for the communication operators, over atb_ops's operators.

```python
from atb_ops import torch_atb          # or, under `python -m atb_ops run`: import torch_atb
op = torch_atb.Operation(torch_atb.AllGatherParam(rank=r, rank_size=n, backend="hccl"))
out = op.forward([x])                  # -> [Tensor of shape [n, *x.shape]]
op.name, op.input_num, op.output_num   # "AllGatherOperation", 1, 1
```

The operators are the ones behind ``torch.classes.OperationTorch.OperationTorch`` (one implementation,
two surfaces), LinearParallelParam's (a matmul fused with its communication) included. ATB's other
operators (ElewiseParam, LinearParam, graphs, ...) are not provided.
"""

from __future__ import annotations

import os
from typing import Any

from atb_ops.torch_atb.enums import AclDataType, AclFormat, CommMode, exported_values
from atb_ops.torch_atb.operation import Operation, Prof, set_buffer_size
from atb_ops.torch_atb.params import (
    AllGatherParam,
    AllReduceParam,
    AllToAllParam,
    BroadcastParam,
    LinearParallelParam,
    ReduceScatterParam,
    ReduceScatterVParam,
)


def get_atb_home_path() -> str | None:
    """ATB_HOME_PATH (the emulation's folder under `python -m atb_ops run`), or None when unset."""
    return os.environ.get("ATB_HOME_PATH")


globals().update(exported_values())  # torch_atb.COMM_MULTI_PROCESS, torch_atb.ACL_FLOAT16, ... as in ATB

__all__ = [
    "AclDataType",
    "AclFormat",
    "AllGatherParam",
    "AllReduceParam",
    "AllToAllParam",
    "BroadcastParam",
    "CommMode",
    "LinearParallelParam",
    "Operation",
    "Prof",
    "ReduceScatterParam",
    "ReduceScatterVParam",
    "get_atb_home_path",
    "set_buffer_size",
    *exported_values(),
]


def __getattr__(name: str) -> Any:
    """Names of ATB's torch_atb that are not here raise an AttributeError that says so."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"torch_atb.{name} is not provided by atb_ops, whose torch_atb has ATB's communication operators only "
        "(AllGatherParam, AllReduceParam, BroadcastParam, ReduceScatterParam, ReduceScatterVParam, AllToAllParam) "
        "and LinearParallelParam"
    )
