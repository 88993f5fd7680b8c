"""From rounds to a table row: each library's median round, with its best round and the spread of its rounds.

With ``--rounds R`` every size runs R times, the libraries taking turns (on a shared machine a burst of someone
else's load then lands on every library, not on one); the row shows each library's median round, so that one
disturbed round moves nobody's figure, and keeps every round in the JSON (``rounds_s`` / ``rounds_us``).
"""

from __future__ import annotations

import statistics
from typing import Any

from atb_ops.bench import report

# The table's column keys, in the order the JSON keeps them: execute_out first, then each comparison.
KEYS = ("atb", "torchscript", "shared", "dist", "dist_single", "dist_scatter", "floor", "gloo", "mpi", "link")


def summarise(entries: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """A library's rounds of one size.

    Args:
        entries: its {"time_s", "wrong"} of each round; None (or NaN time) where it did not run.

    Returns:
        The median round's time (the table's time), the best, the spread ((slowest - fastest) / median), every
        round's time and the most wrong elements any round saw; None when no round ran it.
    """
    got = [e for e in entries if e is not None and e.get("time_s") == e.get("time_s")]
    if not got:
        return None
    times = [float(e["time_s"]) for e in got]
    median = statistics.median(times)
    return {"time_s": median, "best_s": min(times), "spread": (max(times) - min(times)) / median if median else 0.0,
            "rounds_s": times, "wrong": max(int(e["wrong"]) for e in got)}


def make_row(raw: list[dict[str, Any]], mpi_raw: list[dict[str, Any] | None], dtype: str, bus_factor: float,
             keys: list[str]) -> dict[str, Any]:
    """One table row from every round of one size.

    Args:
        raw: the rows the atb_ops ranks reported, one per round (column key -> {"time_s", "wrong"} or None).
        mpi_raw: Open MPI's result of each round it ran.
        dtype: the element type's name.
        bus_factor: busbw / algbw of the collective.
        keys: the comparison columns this run has (beside "atb").

    Returns:
        {"size", "bytes", "count", "type", "figures" (key -> report.figures), "memcpy_gbps"}.
    """
    first = raw[0]
    nbytes = first["bytes"]
    rounds = {key: [r.get(key) for r in raw] for key in KEYS if key != "mpi"}
    rounds["mpi"] = mpi_raw
    figs = {key: report.figures(summarise(entries), nbytes, bus_factor) for key, entries in rounds.items()}
    memcpy = [r["memcpy_s"] for r in raw if r.get("memcpy_s") and r["memcpy_s"] == r["memcpy_s"]]
    return {
        "size": first["size"], "bytes": nbytes, "count": first["count"], "type": dtype,
        "figures": {k: v for k, v in figs.items() if k == "atb" or k in keys},
        "memcpy_gbps": nbytes / min(memcpy) / 1e9 if memcpy else None,
    }
