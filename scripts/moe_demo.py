"""A tiny expert-parallel Mixture-of-Experts layer trained on CPU ranks with atb_ops.distributed.

Each of N ranks owns `experts_per_rank` expert MLPs and a batch of tokens. A shared router sends every
token to its top-1 expert: tokens are sorted by expert, counts exchanged with `all_to_all`, rows moved
with `global_scatter`, each expert runs on its rows (expert-major order), and `global_gather` brings the
results home. The same model trained in one process on all tokens is the reference; the loss curves
must agree to 1e-5 (float64).

    python scripts/moe_demo.py --world-size 2 --steps 5
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import sys

import torch
import torch.distributed as dist

D_MODEL, HIDDEN, TOKENS_PER_RANK, LR = 8, 16, 12, 0.1


def init_params(world_size: int, experts_per_rank: int) -> dict[str, torch.Tensor]:
    """Every parameter of the model, identical on every rank (seeded)."""
    g = torch.Generator().manual_seed(0)
    n_experts = world_size * experts_per_rank
    return {
        "router": torch.randn(D_MODEL, n_experts, generator=g, dtype=torch.float64) * 0.5,
        "w1": torch.randn(n_experts, D_MODEL, HIDDEN, generator=g, dtype=torch.float64) * 0.3,
        "w2": torch.randn(n_experts, HIDDEN, D_MODEL, generator=g, dtype=torch.float64) * 0.3,
    }


def batch(rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(TOKENS_PER_RANK, D_MODEL, generator=g, dtype=torch.float64)
    return x, torch.sin(x)


def expert(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ w1) @ w2


def route(x: torch.Tensor, router: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-1 expert of every token and its gate weight."""
    probs = torch.softmax(x @ router, dim=-1)
    gate, chosen = probs.max(dim=-1)
    return chosen, gate


def moe_forward(
    x: torch.Tensor, router: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """The expert-parallel layer on this rank: w1/w2 hold only this rank's experts."""
    from atb_ops import distributed as ad

    world_size = dist.get_world_size(group)
    experts_per_rank = w1.shape[0]
    chosen, gate = route(x, router)
    order = torch.argsort(chosen, stable=True)
    local_count = torch.bincount(chosen, minlength=world_size * experts_per_rank)
    global_count = ad.all_to_all(local_count, group)  # [src rank, local expert] counts, Paddle's layout
    rows = ad.global_scatter(x[order].contiguous(), local_count, global_count, group)
    # rows are expert-major: all rows for local expert 0 (from every rank), then expert 1, ...
    per_expert = global_count.view(world_size, experts_per_rank).sum(0).tolist()
    outs = [expert(chunk, w1[e], w2[e]) for e, chunk in enumerate(torch.split(rows, per_expert))]
    back = ad.global_gather(torch.cat(outs).contiguous(), local_count, global_count, group)
    y = torch.empty_like(back)
    y[order] = back
    return y * gate.unsqueeze(-1)


def reference_forward(x: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
    chosen, gate = route(x, params["router"])
    y = torch.stack([expert(x[i], params["w1"][chosen[i]], params["w2"][chosen[i]]) for i in range(x.shape[0])])
    return y * gate.unsqueeze(-1)


def train_reference(world_size: int, experts_per_rank: int, steps: int) -> list[float]:
    """One process, all tokens: loss = mean over ranks of each rank's mean squared error."""
    params = {k: v.clone().requires_grad_(True) for k, v in init_params(world_size, experts_per_rank).items()}
    losses = []
    for step in range(steps):
        loss = 0.0
        for rank in range(world_size):
            x, target = batch(rank, step)
            loss = loss + ((reference_forward(x, params) - target) ** 2).mean() / world_size
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                p -= LR * p.grad
                p.grad = None
        losses.append(float(loss.detach()))
    return losses


def train_distributed(rank: int, world_size: int, experts_per_rank: int, steps: int) -> list[float]:
    """This rank's share of the same training; returns the global loss of every step."""
    full = init_params(world_size, experts_per_rank)
    mine = slice(rank * experts_per_rank, (rank + 1) * experts_per_rank)
    router = full["router"].clone().requires_grad_(True)
    w1 = full["w1"][mine].clone().requires_grad_(True)
    w2 = full["w2"][mine].clone().requires_grad_(True)
    losses = []
    for step in range(steps):
        x, target = batch(rank, step)
        loss = ((moe_forward(x, router, w1, w2) - target) ** 2).mean() / world_size
        loss.backward()
        # The router is replicated: sum its gradient over ranks. Expert gradients already hold every
        # rank's contribution (global_scatter's backward brought them here).
        dist.all_reduce(router.grad)
        total = loss.detach().clone()
        dist.all_reduce(total)
        with torch.no_grad():
            for p in (router, w1, w2):
                p -= LR * p.grad
                p.grad = None
        losses.append(float(total))
    return losses


def _rank_main(rank: int, world_size: int, experts_per_rank: int, steps: int, port: int, out: mp.Queue) -> None:
    os.environ["ATB_OPS_JOB_ID"] = f"moe-demo-{port}"
    import atb_ops  # noqa: F401

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        out.put((rank, train_distributed(rank, world_size, experts_per_rank, steps)))
    finally:
        dist.destroy_process_group()


def run(world_size: int = 2, experts_per_rank: int = 2, steps: int = 5) -> tuple[list[float], list[float]]:
    """Train both ways; returns (distributed losses, reference losses)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=_rank_main, args=(r, world_size, experts_per_rank, steps, port, out))
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=300) for _ in range(world_size))
    for p in procs:
        p.join(timeout=30)
    return results[0], train_reference(world_size, experts_per_rank, steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--experts-per-rank", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    dist_losses, ref_losses = run(args.world_size, args.experts_per_rank, args.steps)
    worst = max(abs(a - b) for a, b in zip(dist_losses, ref_losses, strict=True))
    print(f"{'step':>4} {'expert-parallel':>16} {'single-process':>16}")
    for step, (a, b) in enumerate(zip(dist_losses, ref_losses, strict=True)):
        print(f"{step:>4} {a:>16.10f} {b:>16.10f}")
    print(f"max |difference| = {worst:.3e} ({'OK' if worst <= 1e-5 else 'MISMATCH'}, tolerance 1e-5)")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
