"""atb_ops: ATB-compatible alltoallv and collectives on Ascend (HCCL), CUDA (NCCL) and CPU ranks.

Importing the package loads the native core ``atb_ops._C``, which registers the TorchScript class
``torch.classes.OperationTorch.OperationTorch`` (ATB's torch binding), the ``torch.ops.atb_ops``
collectives and the communication backends. ``atb_ops.Operation`` is the same class through pybind11
(same methods, same operator objects, no TorchScript dispatch per call: the one to time small messages with).
"""

from __future__ import annotations

import atexit
from pathlib import Path

import torch

from atb_ops._torch_check import check_torch

check_torch()  # before any native library loads: a clear error instead of an undefined symbol

from atb_ops import (  # noqa: E402
    _C,
    _groups,
    _hooks,
    _manager_no_rank,
    _ops,
    _spawn_scope,
    c10d_backend,
    distributed,
    quant,
)
from atb_ops.errors import AtbError  # noqa: E402

__all__ = [
    "AtbError",
    "Operation",
    "OperationTorch",
    "backends",
    "clear_communicators",
    "distributed",
    "quant",
    "shm_arena_info",
    "shm_empty",
    "shm_is_shared",
    "validate_layout",
]
__version__ = (Path(__file__).resolve().parent / "VERSION").read_text().strip()

_hooks.install(_C)
_spawn_scope.install()  # the children of one torch.multiprocessing.spawn call share a job id
_manager_no_rank.install()  # a Manager's server process is no rank of anybody's job
c10d_backend.register()  # dist.init_process_group("atb_ops")


def clear_communicators() -> None:
    """Releases the communicators of torch.distributed groups (made by ``atb_ops.distributed``) and forgets
    the cached ones; an operation's communicator lives as long as the operation.

    A later collective on a group makes a fresh communicator (every rank must call this alike).
    """
    _groups.forget_handles()
    _C.clear_communicators()


def _at_exit() -> None:
    # While Python is still whole: gloo groups' threads and stores go now, not in static destruction (where
    # their order is undefined and a joinable thread aborts the process), then the default process group if
    # atb_ops made it for backend "gloo".
    _groups.forget_handles()
    _C.clear_communicators(at_exit=True)
    _hooks.destroy_own_default_group()


atexit.register(_at_exit)

OperationTorch = torch.classes.OperationTorch.OperationTorch
Operation = _C.Operation
backends = _C.backends
validate_layout = _C.validate_layout
shm_arena_info = _C.shm_arena_info
shm_is_shared = _C.shm_is_shared
del _ops  # imported for its registrations (fake kernels, autograd)


def shm_empty(*size: int | tuple[int, ...] | list[int], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An uninitialised CPU tensor in this process's shared-memory arena (like ``torch.empty``).

    Peers of a shm communicator have the arena mapped, so a send buffer or an ``execute_out`` output
    allocated here moves with one memcpy at memory bandwidth instead of ``process_vm_readv``.
    ``execute()`` outputs from 64 KiB up to 32 MiB on the shm backend come from the arena already (a freed
    arena block of 32 MiB or more gives its pages back to the system). When the arena is off
    (``ATB_OPS_SHM_ARENA=0``), unavailable or full, this returns an ordinary tensor, and every
    collective still works.
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    shape = tuple(int(s) for s in size)  # type: ignore[arg-type]
    numel = 1
    for s in shape:
        if s < 0:
            raise ValueError(f"shm_empty: negative size {s} in {shape}")
        numel *= s
    itemsize = torch.empty(0, dtype=dtype).element_size()
    return _C.shm_empty_bytes(numel * itemsize).view(dtype).view(shape)
