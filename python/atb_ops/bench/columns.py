"""What a run's table shows: which comparison columns it has, their labels and ratios, and its title lines."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import torch

from atb_ops.bench import ops, pages, report
from atb_ops.bench.config import BenchConfig
from atb_ops.bench.rounds import KEYS

# Column key -> its label; {backend}, {dist}, {torch_call}, {mpi} and {native} are the run's.
LABELS = {
    "torchscript": "atb_ops {backend}, OperationTorch (TorchScript)",
    "shared": "atb_ops {backend}, shm_empty buffers",
    "dist": "atb_ops.distributed.{dist}",
    "dist_single": "atb_ops.distributed.alltoall_single",
    "dist_scatter": "atb_ops.distributed.global_scatter, 2 experts/rank",
    "floor": "torch's floor: {torch_call} on backend 'fake' (does nothing)",
    "gloo": "{native} {torch_call}",  # torch.distributed's call on gloo (CPU) or nccl (CUDA tensors)
    "mpi": "Open MPI {mpi}",
    "link": "raw exchange (gloo isend + recv)",  # bench.raw_link: the link limit's bytes, both ways, one message
}


@dataclass
class Columns:
    """The columns of a run's table."""

    labels: dict[str, str]  # "atb" (execute_out, or the c10d backend), then each comparison column, in KEYS order
    table: list[report.Column]  # the comparison columns with their ratios

    @property
    def keys(self) -> list[str]:
        """The comparison columns' keys."""
        return [c.key for c in self.table]


def columns_for(cfg: BenchConfig, c10d_api: bool, mpi: bool) -> Columns:
    """The columns a run has.

    Args:
        cfg: the run (what it times beside execute_out).
        c10d_api: whether "atb" is torch.distributed's call on the backend "atb_ops" (--api c10d).
        mpi: whether Open MPI's job is running.

    Returns:
        Labels and comparison columns.
    """
    collective = ops.COLLECTIVES[cfg.op]
    expert_api = cfg.api and cfg.op == "alltoallv"
    present = {"torchscript": cfg.torchscript, "shared": cfg.shared, "dist": cfg.api, "dist_single": expert_api,
               "dist_scatter": expert_api, "floor": c10d_api, "gloo": cfg.gloo, "mpi": mpi,
               "link": cfg.hosts == 2 and not c10d_api}
    others = [k for k in KEYS if k != "atb" and present[k]]
    labels = {"atb": f"atb_ops c10d backend, {collective.torch_call}" if c10d_api else f"atb_ops {cfg.backend}"}
    labels.update({k: LABELS[k].format(backend=cfg.backend, dist=collective.distributed,
                                       torch_call=collective.torch_call, mpi=collective.mpi_call,
                                       native="nccl" if cfg.backend == "nccl" else "gloo") for k in others})
    table = []
    for k in others:
        if k in ("shared", "torchscript"):
            ratio = ("vs MPI", "self", "mpi") if mpi else ("vs torch", "self", "atb")
        elif k in ("dist", "dist_single", "dist_scatter"):
            ratio = ("x exec", "atb", "self")  # its time over execute_out's: the framework API's cost
        elif k == "floor":
            ratio = ("x floor", "self", "atb")  # atb_ops' time over torch's own per-call cost
        elif k == "link":
            ratio = ("x raw", "self", "atb")  # atb_ops' time over the bare exchange of the bytes it must move
        else:
            ratio = ("speedup", "atb", "self")
        table.append(report.Column(k, labels[k], *ratio))
    return Columns(labels, table)


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), or what platform knows of it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def pattern_text(cfg: BenchConfig) -> str:
    """The traffic pattern as titles write it ("skewed (spread 8)")."""
    return cfg.pattern + (f" (spread {cfg.spread:g})" if cfg.pattern == "skewed" else "")


def title_lines(cfg: BenchConfig, c10d_api: bool, rounds: int) -> list[str]:
    """The table's title: what was timed, on which host, what the columns mean, and which memory.

    Args:
        cfg: the run.
        c10d_api: whether torch.distributed's call on the backend "atb_ops" is timed (--api c10d).
        rounds: --rounds.

    Returns:
        The lines, without their "# ".
    """
    collective = ops.COLLECTIVES[cfg.op]
    how = (f"median of {rounds} rounds (libraries alternate size by size; best and spread beside it); "
           if rounds > 1 else "")
    return [
        (f"atb_ops bench: torch.distributed.{collective.torch_call} on backend 'atb_ops' (reused buffers), "
         f"{cfg.world_size} rank(s), {cfg.dtype}, " if c10d_api else
         f"atb_ops bench: {collective.operation} execute_out (atb_ops.Operation, reused buffers), "
         f"{cfg.world_size} rank(s), backend {cfg.backend}, {cfg.dtype}, ")
        + (f"pattern {pattern_text(cfg)}, seed {cfg.seed}, " if cfg.op == "alltoallv" else "")
        + f"binding {cfg.bind}",
        f"host: {os.cpu_count() or 1} core(s) {cpu_model()}, {platform.system()} {platform.release()}, "
        f"torch {torch.__version__}",
        f"size: {collective.size_meaning}; time: {how}mean per call, max over ranks; algbw = size/time"
        f" (GB/s = 1e9 B/s); busbw = algbw*{collective.bus_formula}; speedup = their time / atb_ops time;"
        " vs MPI = Open MPI's time / this column's time; x exec = its time / execute_out's time",
        pages.describe(cfg.pages),
    ]
