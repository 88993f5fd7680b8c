"""The collectives bench's bandwidth plot (--plot): algbw against size, one line per library."""

from __future__ import annotations

from typing import Any


def plot(path: str, rows: list[dict[str, Any]], labels: dict[str, str], title: str, world_size: int,
         cores: int) -> None:
    """algbw vs size per library (log x), with the memcpy limit measured in the run, saved as a PNG.

    Args:
        path: the PNG to write.
        rows: the table's rows (report.figures under "figures").
        labels: column key -> the library's label.
        title: the plot's title.
        world_size: the ranks (the memcpy limit is shared among them when they outnumber the cores).
        cores: this host's cores.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for key, label in labels.items():
        pts = [(r["bytes"], r["figures"][key]["algbw"]) for r in rows if r["figures"].get(key) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    mem = [(r["bytes"], r["memcpy_gbps"] * min(1.0, cores / world_size)) for r in rows if r.get("memcpy_gbps")]
    if mem:
        ax.plot([p[0] for p in mem], [p[1] for p in mem], linestyle="--", color="gray",
                label=f"memcpy limit per rank ({world_size} ranks, {cores} cores)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size per rank (bytes, busiest rank)")
    ax.set_ylabel("algbw (GB/s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
