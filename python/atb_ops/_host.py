"""This host's identity, as the ranks of a group compare it to learn whether they all share one host."""

from __future__ import annotations


def host_id() -> str:
    """This host's identity: csrc/core/host.h's, the one the native backends compare too.

    Returns:
        "<hostname>/<boot id>/<device of ATB_OPS_SHM_DIR>/<pid namespace>": equal exactly when two processes
        share a kernel, the shared-memory folder and process ids (containers and network-namespace hosts on one
        kernel differ).
    """
    from atb_ops import _C  # noqa: PLC0415  (c10d_backend imports this module while _C loads)

    return _C.host_id()
