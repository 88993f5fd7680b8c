"""Independent references: random layouts and the numpy golden result of an alltoallv.

Everything here is plain numpy on raw bit patterns (an alltoallv only moves bytes), so float16,
bfloat16 and bool are compared exactly, with no rounding anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from atb_ops.bench.workload import DTYPES  # the dtypes every backend moves, by name (one table for all)

# A byte pattern no test writes on purpose: an element still holding it was never received.
SENTINEL_BYTE = 0xA5


def itemsize(dtype_name: str) -> int:
    return torch.empty(0, dtype=DTYPES[dtype_name]).element_size()


def bits_view(raw: bytes, dtype_name: str) -> np.ndarray:
    """The elements as unsigned integers of the dtype's width."""
    return np.frombuffer(raw, dtype=np.dtype(f"u{itemsize(dtype_name)}"))


def random_payload(rng: np.random.Generator, numel: int, dtype_name: str) -> bytes:
    """numel valid elements of dtype as raw bytes (bools are 0/1; floats are finite)."""
    if numel == 0:
        return b""
    if dtype_name == "bool":
        return rng.integers(0, 2, numel, dtype=np.uint8).tobytes()
    if dtype_name.startswith("float") or dtype_name == "bfloat16":
        t = torch.from_numpy(rng.standard_normal(numel) * 100).to(DTYPES[dtype_name])
        return t.contiguous().view(torch.uint8).numpy().tobytes()
    return rng.integers(0, 256, numel * itemsize(dtype_name), dtype=np.uint8).tobytes()


@dataclass
class RankLayout:
    send_counts: list[int]
    sdispls: list[int]
    recv_counts: list[int]
    rdispls: list[int]
    send_numel: int  # elements of x (regions may leave gaps and overlap)


def count_matrix(rng: np.random.Generator, n: int, pattern: str, scale: int) -> np.ndarray:
    """C[i, j]: elements rank i sends to rank j."""
    if pattern == "uniform":
        return np.full((n, n), scale, dtype=np.int64)
    if pattern == "skewed":
        c = rng.integers(0, max(scale // 8, 1) + 1, (n, n))
        hot = rng.integers(0, n, n)  # every sender has one destination that gets most of its data
        c[np.arange(n), hot] += scale * 4
        return c.astype(np.int64)
    if pattern == "zero":
        c = rng.integers(0, scale + 1, (n, n))
        c[rng.random((n, n)) < 0.4] = 0
        if n > 1:
            c[0, :] = 0  # rank 0 sends nothing
            c[:, n - 1] = 0  # rank n-1 receives nothing
        else:
            c[:] = 0
        return c.astype(np.int64)
    raise ValueError(f"unknown pattern {pattern!r}")


def rank_layouts(rng: np.random.Generator, counts: np.ndarray, gaps: bool, overlap: bool) -> list[RankLayout]:
    """Shuffled displacements: send regions in a random order with gaps (and, if asked, overlaps);
    receive regions tiling the output in a random order."""
    n = counts.shape[0]
    out = []
    for r in range(n):
        send = counts[r, :].tolist()
        recv = counts[:, r].tolist()
        sdispls = [0] * n
        pos = 0
        for j in rng.permutation(n):
            if overlap and pos > 0 and rng.random() < 0.5:
                pos = int(rng.integers(0, pos))  # start inside what is already placed
            elif gaps:
                pos += int(rng.integers(0, 5))
            sdispls[j] = pos
            pos += send[j]
        send_numel = max([sdispls[j] + send[j] for j in range(n)] + [0]) + (3 if gaps else 0)
        rdispls = [0] * n
        pos = 0
        for j in rng.permutation(n):
            rdispls[j] = pos
            pos += recv[j]
        out.append(RankLayout(send, sdispls, recv, rdispls, send_numel))
    return out


def golden_alltoallv(payloads: list[bytes], layouts: list[RankLayout], dtype_name: str) -> list[np.ndarray]:
    """What every rank must receive, computed from the senders' payloads by slicing."""
    n = len(layouts)
    xs = [bits_view(p, dtype_name) for p in payloads]
    outs = []
    for r in range(n):
        total = sum(layouts[r].recv_counts)
        out = np.zeros(total, dtype=xs[0].dtype)
        for src in range(n):
            start = layouts[src].sdispls[r]
            piece = xs[src][start : start + layouts[src].send_counts[r]]
            assert len(piece) == layouts[r].recv_counts[src]
            out[layouts[r].rdispls[src] : layouts[r].rdispls[src] + len(piece)] = piece
        outs.append(out)
    return outs
