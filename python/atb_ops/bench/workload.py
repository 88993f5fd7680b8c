"""What the benchmark moves: sizes, traffic patterns, count layouts and self-checking data.

Everything here is deterministic from (world size, size, dtype, pattern, spread, seed), so the ranks,
the Open MPI helper and the tests build the same layouts and the same bytes without talking.

Data: the elements rank s sends to rank d are a window of one periodic sequence
``P[k] = (92 * k) mod 251`` (mapped into the dtype's exact range), starting at an offset that depends
on (seed, s, d). A receiver knows which window it must find in each receive region, so ``#wrong``
counts elements that came from the wrong sender, the wrong offset, or were never written (the output
starts as a sentinel byte pattern before the checked call).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

DTYPES: dict[str, torch.dtype] = {
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "float64": torch.float64,
}

PATTERNS = ("uniform", "skewed")
PERIOD = 251  # prime: a window shifted by fewer than PERIOD elements never matches itself
STEP = 92  # invertible mod PERIOD, so every offset of the sequence is a distinct window
SENTINEL = 0x7F  # outside every dtype's data range (|v| <= 125; bool 0/1; NaN or huge for floats)

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


MAX_SIZE = 1 << 40  # 1 TiB per rank: beyond any machine's memory here, and far from int64 overflow


def parse_size(text: str) -> int:
    """'4096', '1K', '1KiB', '64M', '1G' (binary units) -> bytes.

    Raises:
        ValueError: For anything else, or a size below 1 byte.
    """
    m = re.fullmatch(r"\s*(\d+)\s*([KMGkmg]?)(?:i?[Bb])?\s*", text)
    if not m:
        raise ValueError(f"bad size '{text}': use bytes or a K/M/G suffix, e.g. 4096, 1K, 64M, 1G")
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value < 1:
        raise ValueError(f"size must be at least 1 byte, got '{text}'")
    if value > MAX_SIZE:
        raise ValueError(f"size '{text}' is above the largest the bench takes, {format_bytes(MAX_SIZE)}")
    return value


def parse_sizes(text: str) -> list[int]:
    """Sizes as a list 'A,B,C', a range 'LO:HI' (x4 steps) or 'LO:HI:FACTOR'; items may mix."""
    sizes: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.split(":")
        if len(parts) == 1:
            sizes.append(parse_size(parts[0]))
            continue
        if len(parts) not in (2, 3):
            raise ValueError(f"bad size range '{item}': use LO:HI or LO:HI:FACTOR")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        factor = int(parts[2]) if len(parts) == 3 else 4
        if factor < 2 or hi < lo:
            raise ValueError(f"bad size range '{item}': need LO <= HI and FACTOR >= 2")
        size = lo
        while size <= hi:
            sizes.append(size)
            size *= factor
    if not sizes:
        raise ValueError(f"no sizes in '{text}'")
    return sizes


def format_bytes(n: int) -> str:
    """1024 -> '1 KiB', 67108864 -> '64 MiB' (exact multiples only; otherwise bytes)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def element_size(dtype: torch.dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


def count_matrix(world_size: int, count: int, pattern: str, spread: float = 4.0) -> list[list[int]]:
    """C[i][j]: elements rank i sends to rank j, so that the busiest rank receives about `count`.

    uniform: every pair moves count // n elements (what nccl-tests' alltoall does).
    skewed:  destination j receives spread ** (-j / (n - 1)) of what rank 0 receives, split evenly
             over the senders: rank 0 is the hot expert of a MoE layer and receives `count`
             elements, rank n-1 receives count / spread. spread = 1 is uniform.
    """
    n = world_size
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got '{pattern}'")
    if spread < 1:
        raise ValueError(f"--spread must be >= 1, got {spread}")
    if pattern == "uniform" or n == 1:
        per = count // n
        return [[per] * n for _ in range(n)]
    weights = [spread ** (-j / (n - 1)) for j in range(n)]
    return [[int(count * weights[j]) // n for j in range(n)] for _ in range(n)]


@dataclass(frozen=True)
class RankLayout:
    """One rank's counts and packed displacements, in elements."""

    send_counts: list[int]
    sdispls: list[int]
    recv_counts: list[int]
    rdispls: list[int]

    @property
    def send_numel(self) -> int:
        return sum(self.send_counts)

    @property
    def recv_numel(self) -> int:
        return sum(self.recv_counts)

    def pack(self) -> dict[str, list[int]]:
        """set_varaintpack_param's JSON fields."""
        return {
            "sendCounts": self.send_counts,
            "sdispls": self.sdispls,
            "recvCounts": self.recv_counts,
            "rdispls": self.rdispls,
        }


def _prefix(values: list[int]) -> list[int]:
    out, total = [], 0
    for v in values:
        out.append(total)
        total += v
    return out


def rank_layout(matrix: list[list[int]], rank: int) -> RankLayout:
    """Rank `rank`'s view of the count matrix, regions packed in rank order (as gloo requires)."""
    send = list(matrix[rank])
    recv = [row[rank] for row in matrix]
    return RankLayout(send, _prefix(send), recv, _prefix(recv))


def busiest_bytes(matrix: list[list[int]], elem_size: int) -> int:
    """Bytes moved by the busiest rank: the larger of what any rank sends and what any rank receives."""
    n = len(matrix)
    most_sent = max(sum(row) for row in matrix)
    most_received = max(sum(matrix[i][j] for i in range(n)) for j in range(n))
    return max(most_sent, most_received) * elem_size


def region_shift(seed: int, src: int, dst: int) -> int:
    """Where in the periodic sequence the (src -> dst) region starts."""
    return (seed * 65537 + src * 7919 + dst * 104729 + 17) % PERIOD


def periodic(length: int, dtype: torch.dtype) -> torch.Tensor:
    """P[k] = (STEP * k) % PERIOD - 125 for k < length: exact in every dtype, never the sentinel (bool: P & 1)."""
    base = (torch.arange(PERIOD, dtype=torch.int64) * STEP) % PERIOD
    if dtype == torch.bool:
        base = (base & 1).to(torch.bool)
    elif dtype == torch.uint8:
        base = ((base - 125) % 256).to(torch.uint8)  # 131..255, 0..125: never the sentinel 0x7F
    else:
        base = (base - 125).to(dtype)
    reps = -(-max(length, 1) // PERIOD)
    return base.repeat(reps)[:length]


def fill_send(send: torch.Tensor, layout: RankLayout, rank: int, seed: int, seq: torch.Tensor) -> None:
    """Writes rank `rank`'s payload for every destination into send (1-D, packed layout)."""
    for dst, (count, displ) in enumerate(zip(layout.send_counts, layout.sdispls, strict=True)):
        if count:
            shift = region_shift(seed, rank, dst)
            send[displ : displ + count].copy_(seq[shift : shift + count])


def count_wrong(out: torch.Tensor, layout: RankLayout, rank: int, seed: int, seq: torch.Tensor) -> int:
    """Elements of out (1-D) that differ from what each sender put in its region for this rank."""
    wrong = 0
    for src, (count, displ) in enumerate(zip(layout.recv_counts, layout.rdispls, strict=True)):
        if count:
            shift = region_shift(seed, src, rank)
            got, want = out[displ : displ + count], seq[shift : shift + count]
            if got.dtype == torch.bool:  # compare bytes: a sentinel byte must not pass as True
                got, want = got.view(torch.uint8), want.view(torch.uint8)
            wrong += int(got.ne(want).sum())
    return wrong


def sequence_for(matrix: list[list[int]], dtype: torch.dtype) -> torch.Tensor:
    """The periodic sequence long enough for every region of the matrix."""
    longest = max((c for row in matrix for c in row), default=0)
    return periodic(longest + PERIOD, dtype)


def poison(t: torch.Tensor) -> None:
    """Fills t's bytes with the sentinel, so an element nobody wrote is counted as wrong."""
    t.reshape(-1).view(torch.uint8).fill_(SENTINEL)
