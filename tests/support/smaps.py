"""This process's memory mappings as /proc/self/smaps lists them, for tests that check what the kernel did with a
tensor's pages (huge pages advised or granted)."""

from __future__ import annotations

from collections.abc import Iterator

import torch


def mappings_of(t: torch.Tensor) -> Iterator[tuple[int, dict[str, str]]]:
    """Every mapping that holds some of t's bytes.

    Args:
        t: a CPU tensor.

    Returns:
        An iterator of (how many of t's bytes the mapping holds, its fields: name -> the rest of the line, e.g.
        "AnonHugePages" -> "2048 kB", "VmFlags" -> "rd wr mr mw me ac hg").
    """
    begin, end = t.data_ptr(), t.data_ptr() + t.nbytes
    span, fields = 0, {}
    with open("/proc/self/smaps") as f:
        for line in f:
            head, _, rest = line.partition(" ")
            if "-" in head and not head.endswith(":"):  # a mapping's first line: "lo-hi perms offset ..."
                if span > 0:
                    yield span, fields
                lo, hi = (int(v, 16) for v in head.split("-"))
                span, fields = max(0, min(hi, end) - max(lo, begin)), {}
            else:
                fields[head.rstrip(":")] = rest.strip()
    if span > 0:
        yield span, fields
