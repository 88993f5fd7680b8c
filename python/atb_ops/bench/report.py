"""The collectives bench's output: the nccl-tests style table and its JSON figures."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from atb_ops.bench import table, workload


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


RATIO = 8  # a ratio column: "1234.56x"


def _figure_fields(rounds: bool) -> tuple[table.Field, ...]:
    """A library's cell: time(us), then best(us) and spread with several rounds, algbw, busbw, #wrong."""
    fields = [table.Field("time(us)", 10, lambda f: f"{f['time_us']:.1f}")]
    if rounds:
        fields += [table.Field("best(us)", 10, lambda f: f"{f['best_us']:.1f}"),
                   table.Field("spread", 7, lambda f: f"{100 * f['spread']:.1f}%")]
    fields += [table.Field("algbw", 8, lambda f: f"{f['algbw']:.2f}"),
               table.Field("busbw", 8, lambda f: f"{f['busbw']:.2f}"),
               table.Field("#wrong", 6, lambda f: f"{f['wrong']:d}")]
    return tuple(fields)


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

    def ratio(self, row: dict[str, Any]) -> str:
        """The ratio's cell: slower's time over faster's (the times shown: medians when there are several
        rounds); "--" where either is missing."""
        figs = row["figures"]
        faster = figs.get(self.key if self.faster == "self" else self.faster)
        slower = figs.get(self.key if self.slower == "self" else self.slower)
        if faster is None or slower is None or faster["time_us"] <= 0:
            return "--"
        return f"{slower['time_us'] / faster['time_us']:.2f}x"


def blocks(dtype: str, main_label: str, columns: list[Column], rounds: bool = False) -> list[table.Block]:
    """The nccl-tests table: size, count and type, the atb_ops cell, then each comparison cell with its ratio.

    Args:
        dtype: the element type's name (the type column).
        main_label: the atb_ops column's label.
        columns: the comparison columns.
        rounds: whether cells carry best(us) and spread after the time.

    Returns:
        The table's blocks (atb_ops.bench.table).
    """
    cell = _figure_fields(rounds)
    out = [table.Block((table.Field("size", 12, lambda r: f"{r['bytes']:d}"),
                        table.Field("count", 12, lambda r: f"{r['count']:d}"),
                        table.Field("type", 8, lambda r: dtype))),
           table.Block(cell, gap="  ", pick=lambda r: r["figures"]["atb"], label=main_label)]
    for col in columns:
        out.append(table.Block(cell, gap="  ", pick=lambda r, key=col.key: r["figures"].get(key), label=col.label))
        out.append(table.Block((table.Field(col.ratio_label, RATIO, col.ratio),), label=None))
    return out


def header(title_lines: list[str], main_label: str, columns: list[Column], rounds: bool = False) -> str:
    """The title lines and the two header lines; `rounds`: cells carry best(us) and spread after the time."""
    lines = table.title_lines([*title_lines, ""])
    return "\n".join(lines + table.header(blocks("", main_label, columns, rounds), prefix="# "))


def row_line(row: dict[str, Any], dtype: str, columns: list[Column], rounds: bool = False) -> str:
    """One table row: the atb_ops figures, then each comparison column with its ratio (of the times shown:
    medians when there are several rounds)."""
    return table.row(blocks(dtype, "", columns, rounds), row, prefix="  ")


def avg_busbw(rows: list[dict[str, Any]], key: str) -> float | None:
    """Column `key`'s bus bandwidth averaged over the rows that have it (GB/s); None where none has."""
    values = [r["figures"][key]["busbw"] for r in rows if r["figures"].get(key) is not None]
    return sum(values) / len(values) if values else None


def footer(rows: list[dict[str, Any]], labels: dict[str, str], world_size: int, cores: int) -> str:
    """nccl-tests' footer: whether any element was wrong, each library's average bus bandwidth, and the memcpy
    bound measured in the run.

    Args:
        rows: the table's rows.
        labels: column key -> label, for the columns that move data.
        world_size: the ranks (they share the cores when they outnumber them).
        cores: this host's cores.

    Returns:
        The footer's lines.
    """
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


def link_limits(rows: list[dict[str, Any]], labels: dict[str, str]) -> str:
    """Across shaped emulated hosts: each size's link limit (the bytes the busiest host must send to the others,
    at the link's rate) and how far each library's time is from it (limit / time: 1.00 would be the link full).

    Args:
        rows: the table's rows, with "link_limit_us" where the link is shaped.
        labels: column key -> label, for the columns that move data.

    Returns:
        The lines, one per size.
    """
    lines = ["#", "# link limit (the bytes the busiest host sends to the others / the link's rate), and each "
             "library's share of it (limit / its time)"]
    for r in rows:
        limit = r.get("link_limit_us")
        if limit is None:
            continue
        shares = []
        for key, label in labels.items():
            f = r["figures"].get(key)
            if f is not None and f["time_us"] > 0:
                shares.append(f"{label} {limit / f['time_us']:.2f}")
        lines.append(f"# {workload.format_bytes(r['size']):>8}  {limit:10.1f} us   " + ", ".join(shares))
    return "\n".join(lines)

