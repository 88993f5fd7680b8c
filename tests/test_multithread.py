"""commMode 1 (multi-thread): the ranks are threads of one process, each with its own operation."""

from __future__ import annotations

import json
import threading

import torch

import atb_ops  # noqa: F401


def test_threads_as_ranks_on_shm():
    world_size, per_peer = 3, 5
    outputs: dict[int, torch.Tensor] = {}
    errors: list[BaseException] = []

    def rank_main(rank: int) -> None:
        try:
            op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
            op.set_param(
                json.dumps(
                    {"rank": rank, "rankSize": world_size, "backend": "shm", "commMode": 1, "commDomain": "threads"}
                )
            )
            x = torch.arange(per_peer * world_size, dtype=torch.int32) + 100 * rank
            counts = torch.full((world_size,), per_peer, dtype=torch.int64)
            displs = torch.arange(world_size, dtype=torch.int64) * per_peer
            for _ in range(3):  # repeated calls reuse the cached communicator
                (out,) = op.execute([x, counts, displs, counts, displs, torch.empty(per_peer * world_size)])
            outputs[rank] = out
        except BaseException as e:  # noqa: BLE001 - re-raised by the test thread
            errors.append(e)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for rank in range(world_size):
        want = torch.cat(
            [
                torch.arange(rank * per_peer, (rank + 1) * per_peer, dtype=torch.int32) + 100 * src
                for src in range(world_size)
            ]
        )
        assert torch.equal(outputs[rank].view(-1), want)
