"""Plain-torch goldens of atb_ops.distributed's collectives, computed in the test process from every rank's
inputs (tests/distributed/test_distributed.py): nothing of atb_ops runs here."""

from __future__ import annotations

import torch

EXPERTS = 2  # per rank, in the global_scatter / global_gather cases


def inputs(rank: int, world_size: int) -> dict:
    """The tensors and counts rank `rank` passes (the same generator in the ranks and in the test)."""
    gen = torch.Generator().manual_seed(1234 + rank)
    n = world_size
    # rank r sends (r + 2q + e) % 3 rows to expert e of rank q; receives (q + 2r + e) % 3 from rank q's.
    local = [(rank + 2 * q + e) % 3 for q in range(n) for e in range(EXPERTS)]
    global_ = [(q + 2 * rank + e) % 3 for q in range(n) for e in range(EXPERTS)]
    return {
        "x": torch.randn(2 * n, 3, dtype=torch.float64, generator=gen),
        "rows": torch.randn(sum(local), 3, dtype=torch.float64, generator=gen),
        "expert_rows": torch.randn(sum(global_), 3, dtype=torch.float64, generator=gen),
        "local": local,
        "global": global_,
    }


def _block(t: torch.Tensor, counts: list[int], i: int) -> torch.Tensor:
    start = sum(counts[:i])
    return t[start : start + counts[i]]


def expected(rank: int, world_size: int) -> dict[str, torch.Tensor]:
    """What rank `rank` must get from each call of dist_tasks.direct_and_dispatcher_paths_agree."""
    n = world_size
    ins = [inputs(r, n) for r in range(n)]
    xs = [i["x"] for i in ins]
    rows_of = slice(2 * rank, 2 * rank + 2)
    scatter = [
        _block(ins[q]["rows"], ins[q]["local"], rank * EXPERTS + e) for e in range(EXPERTS) for q in range(n)
    ]
    # global_gather's input on rank q is ordered expert-major, then source rank; rank `rank` gets back, in its
    # own local order i, the block of expert i % E of rank i // E that came from `rank`.
    def gathered(i: int) -> torch.Tensor:
        q, e = divmod(i, EXPERTS)
        order = [(ee, src) for ee in range(EXPERTS) for src in range(n)]
        counts = [ins[q]["global"][src * EXPERTS + ee] for ee, src in order]
        return _block(ins[q]["expert_rows"], counts, order.index((e, rank)))

    return {
        "all_reduce": sum(xs[1:], xs[0].clone()),
        "reduce_scatter": sum(xs[1:], xs[0].clone())[rows_of],
        "all_gather": torch.cat(xs),
        "broadcast": xs[n - 1],
        "all_to_all": torch.cat([x[rows_of] for x in xs]),
        "all_to_all_v": torch.cat([x.reshape(-1)[:2] for x in xs]),
        "global_scatter": torch.cat(scatter),
        "global_gather": torch.cat([gathered(i) for i in range(n * EXPERTS)]),
        "alltoall_single": torch.cat([x[rows_of] for x in xs]),
    }
