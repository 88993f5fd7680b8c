"""Count matrices (matrix[i][j] = elements rank i sends rank j) on the edges the shm backend cares about: the eager
limit (ATB_OPS_SHM_EAGER, 65536 bytes by default) +- one element, the split threshold (256 KiB) and its 4 KiB
granule, odd counts that are no multiple of any alignment, zero rows and columns. Each takes the world size and the
element size in bytes."""

from __future__ import annotations

EAGER = 65536
SPLIT_MIN = 256 << 10
STREAMING_OUTPUT = 16 << 20


def eager_edge_matrix(n: int, es: int) -> list[list[int]]:
    """Messages of exactly the eager limit, one element under and one over, plus tiny odd ones."""
    counts = [EAGER // es - 1, EAGER // es, EAGER // es + 1, 1, 3]
    return [[counts[(i * n + j) % len(counts)] for j in range(n)] for i in range(n)]


def odd_matrix(n: int, es: int) -> list[list[int]]:
    """Counts that are no multiple of 64 bytes, a page or the split granule; some zero."""
    counts = [0, 1, 17, 1023, 4097, 65537 // es + 1, 40961]
    return [[counts[(3 * i + 5 * j) % len(counts)] for j in range(n)] for i in range(n)]


def skewed_matrix(n: int, es: int) -> list[list[int]]:
    """Everyone sends rank 0 a large message (beyond the split threshold, not granule-aligned):
    rank 0 is far busier than its senders, so they push part of their messages themselves."""
    big = (SPLIT_MIN + 3 * 4096 + 5) // es + 3
    return [[big if j == 0 else 37 + i + j for j in range(n)] for i in range(n)]


def uniform_direct_matrix(n: int, es: int) -> list[list[int]]:
    """Every message the same size, above the eager limit and below the split threshold: all direct copies."""
    return [[(100 << 10) // es + 1] * n for _ in range(n)]


def streaming_matrix(n: int, es: int) -> list[list[int]]:
    """Every rank receives a little over 16 MiB (STREAMING_OUTPUT), in odd counts: outputs that large are
    written with non-temporal stores, from offsets no multiple of 16 bytes."""
    return [[STREAMING_OUTPUT // (n * es) + 2 * i + 1 for _ in range(n)] for i in range(n)]


def zero_edges_matrix(n: int, es: int) -> list[list[int]]:
    """Rank 0 sends nothing and rank n-1 receives nothing; the rest mixes eager and direct."""
    m = [[(EAGER // es if (i + j) % 2 else (EAGER // es) * 3 + 1) for j in range(n)] for i in range(n)]
    for j in range(n):
        m[0][j] = 0
    for i in range(n):
        m[i][n - 1] = 0
    return m


ALL = [eager_edge_matrix, odd_matrix, skewed_matrix, uniform_direct_matrix, zero_edges_matrix]
