"""The collectives bench's output: the nccl-tests style table and its JSON figures."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from atb_ops.bench import workload

COLUMNS = ("time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")


def figures(entry: dict[str, Any] | None, nbytes: int, bus_factor: float) -> dict[str, float] | None:
    """time (us), algbw and busbw (GB/s) from a {"time_s", "wrong"} entry; None when not measured.
    bus_factor: busbw / algbw of the collective (nccl-tests: (n-1)/n for alltoallv, 2(n-1)/n for allreduce)."""
    if entry is None or entry.get("time_s") is None or math.isnan(entry["time_s"]):
        return None
    t = entry["time_s"]
    algbw = nbytes / t / 1e9 if t > 0 else 0.0
    figs = {
        "time_us": t * 1e6,
        "algbw": algbw,
        "busbw": algbw * bus_factor,
        "wrong": int(entry["wrong"]),
    }
    if "best_s" in entry:  # several rounds: time is their median
        figs.update(best_us=entry["best_s"] * 1e6, spread=entry["spread"],
                    rounds_us=[r * 1e6 for r in entry["rounds_s"]])
    return figs


CELL = 35  # time(us) algbw busbw #wrong
ROUNDS_CELL = 18  # best(us) spread, after the time when there are several rounds
RATIO = 8


def _cell(f: dict[str, float] | None, rounds: bool = False) -> str:
    if f is None:
        return f"{'--':>{CELL + (ROUNDS_CELL if rounds else 0)}}"
    text = f"{f['time_us']:10.1f} "
    if rounds:
        text += f"{f['best_us']:10.1f} {100 * f['spread']:6.1f}% "
    return text + f"{f['algbw']:8.2f} {f['busbw']:8.2f} {f['wrong']:6d}"


def _ratio(faster: dict[str, float] | None, slower: dict[str, float] | None) -> str:
    """slower's time over faster's time: how many times faster `faster` is."""
    if faster is None or slower is None or faster["time_us"] <= 0:
        return f"{'--':>{RATIO}}"
    return f"{slower['time_us'] / faster['time_us']:7.2f}x"


@dataclass(frozen=True)
class Column:
    """A comparison column: its figures (row["figures"][key]) and a ratio of times.

    ratio = time of `slower` / time of `faster`, where each is a figures key; "self" names this column.
    """

    key: str
    label: str
    ratio_label: str
    faster: str
    slower: str


def header(title_lines: list[str], main_label: str, columns: list[Column], rounds: bool = False) -> str:
    """The title lines and the two header lines; `rounds`: cells carry best(us) and spread after the time."""
    lines = [f"# {t}" for t in title_lines]
    width = CELL + (ROUNDS_CELL if rounds else 0)
    group = f"{main_label:^{width}}"
    cell = f"{'time(us)':>10} " + (f"{'best(us)':>10} {'spread':>7} " if rounds else "")
    cell += f"{'algbw':>8} {'busbw':>8} {'#wrong':>6}"
    units = cell
    for col in columns:
        group += f"  {col.label:^{width + 1 + RATIO}}"
        units += f"  {cell} {col.ratio_label:>{RATIO}}"
    lines.append("#")
    lines.append(f"# {'':>12} {'':>12} {'':>8}  {group.rstrip()}")
    lines.append(f"# {'size':>12} {'count':>12} {'type':>8}  {units}")
    return "\n".join(lines)


def row_line(row: dict[str, Any], dtype: str, columns: list[Column], rounds: bool = False) -> str:
    """One table row: the atb_ops figures, then each comparison column with its ratio (of the times shown:
    medians when there are several rounds)."""
    figs = row["figures"]
    text = f"  {row['bytes']:>12d} {row['count']:>12d} {dtype:>8}  {_cell(figs['atb'], rounds)}"
    for col in columns:

        def pick(key: str, col: Column = col) -> dict[str, float] | None:
            return figs.get(col.key if key == "self" else key)

        text += f"  {_cell(figs.get(col.key), rounds)} {_ratio(pick(col.faster), pick(col.slower))}"
    return text


def avg_busbw(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r["figures"][key]["busbw"] for r in rows if r["figures"].get(key) is not None]
    return sum(values) / len(values) if values else None


def footer(rows: list[dict[str, Any]], labels: dict[str, str], world_size: int, cores: int) -> str:
    lines = ["#", "# Out of bounds values : 0 OK" if all(
        (r["figures"][k] is None or r["figures"][k]["wrong"] == 0) for r in rows for k in r["figures"]
    ) else "# Out of bounds values : WRONG ELEMENTS FOUND (see #wrong)"]
    for key, label in labels.items():
        avg = avg_busbw(rows, key)
        if avg is not None:
            lines.append(f"# Avg bus bandwidth    : {avg:.3f} GB/s  ({label})")
    big = [r for r in rows if r.get("memcpy_gbps")]
    if big:
        last = big[-1]
        share = min(1.0, cores / world_size)
        lines.append(
            f"# memcpy limit         : {last['memcpy_gbps']:.2f} GB/s for {workload.format_bytes(last['bytes'])}"
            f" (one thread, measured in this run; {world_size} rank(s) on {cores} core(s): "
            f"per-rank ceiling ~{last['memcpy_gbps'] * share:.2f} GB/s algbw)"
        )
    return "\n".join(lines)


def above_floor(rows: list[dict[str, Any]]) -> str:
    """The footer line of --api c10d: atb_ops' time above torch's floor (the same call on a backend that does
    nothing), per size, in us."""
    cells = []
    for r in rows:
        ours, floor = r["figures"].get("atb"), r["figures"].get("floor")
        if ours and floor:
            cells.append(f"{workload.format_bytes(r['bytes'])} {ours['time_us'] - floor['time_us']:+.1f}")
    return "# atb_ops above floor  : " + (", ".join(cells) if cells else "--") + " us per call"
