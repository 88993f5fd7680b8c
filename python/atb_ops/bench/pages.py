"""The same memory for every library the benchmark times.

atb_ops collapses the buffers an operation is given call after call onto transparent huge pages (4 MiB and
more; ``ATB_OPS_HUGEPAGES``), and numpy gives an MPI user's arrays huge pages by default (``madvise`` from
4 MiB). A table that times atb_ops on huge pages against Open MPI on 4 KiB pages measures the pages, not the
libraries. With ``--pages huge`` (the default) every library's reused buffers get exactly what atb_ops does to
its own, through the same function (``atb_ops._C.collapse_huge_pages``), before its timed loop; with
``--pages small`` nobody's are collapsed and atb_ops' own collapse is off (``ATB_OPS_HUGEPAGES=0``).
THP set to ``always`` gives every library huge pages in either case: the table's title names the mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch

CHOICES = ("huge", "small")
_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def env_for(pages: str) -> dict[str, str]:
    """The environment every rank (atb_ops' and Open MPI's) runs with for `pages`."""
    return {"ATB_OPS_HUGEPAGES": "1" if pages == "huge" else "0"}


def thp_mode() -> str:
    """The kernel's THP mode ("always", "madvise", "never"), or "unknown" where it does not say."""
    try:
        text = _THP.read_text()
    except OSError:
        return "unknown"
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else "unknown"


def describe(pages: str) -> str:
    """The title line that says which memory every library had."""
    mode = thp_mode()
    if pages == "huge":
        what = "every library's reused buffers of 4 MiB and more collapsed onto huge pages (as atb_ops does its own)"
    else:
        what = "no library's buffers collapsed (ATB_OPS_HUGEPAGES=0)"
    return f"memory: {what}; THP mode '{mode}'"


def give_same_pages(pages: str, buffers: Iterable[torch.Tensor]) -> int:
    """Collapses `buffers` onto huge pages when `pages` is "huge" (a no-op for "small"); returns the bytes.

    Args:
        pages: "huge" or "small" (CHOICES).
        buffers: the tensors a library is timed on; CPU tensors under 4 MiB are left alone, as atb_ops leaves
            its own.

    Returns:
        The bytes collapsed (0 where THP is off or the kernel refuses).

    Raises:
        ValueError: When `pages` is not one of CHOICES.
    """
    if pages not in CHOICES:
        raise ValueError(f"pages must be one of {CHOICES}, got {pages!r}")
    if pages != "huge":
        return 0
    from atb_ops import _C

    return sum(int(_C.collapse_huge_pages(t)) for t in buffers if t.device.type == "cpu")
