"""commMode 1 (multi-thread): the ranks are threads of one process, each with its own operation."""

from __future__ import annotations

import json
import threading
import time

import torch

import atb_ops  # noqa: F401
from tests.support.rank_threads import run_threads


def test_threads_as_ranks_on_shm():
    world_size, per_peer = 3, 5

    def rank_main(rank: int) -> torch.Tensor:
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        op.set_param(
            json.dumps({"rank": rank, "rankSize": world_size, "backend": "shm", "commMode": 1, "commDomain": "threads"})
        )
        x = torch.arange(per_peer * world_size, dtype=torch.int32) + 100 * rank
        counts = torch.full((world_size,), per_peer, dtype=torch.int64)
        displs = torch.arange(world_size, dtype=torch.int64) * per_peer
        for _ in range(3):  # repeated calls reuse the cached communicator
            (out,) = op.execute([x, counts, displs, counts, displs, torch.empty(per_peer * world_size)])
        return out

    outputs = run_threads(world_size, rank_main, timeout_s=120)  # a rank's failure is re-raised here
    for rank in range(world_size):
        want = torch.cat(
            [
                torch.arange(rank * per_peer, (rank + 1) * per_peer, dtype=torch.int32) + 100 * src
                for src in range(world_size)
            ]
        )
        assert torch.equal(outputs[rank].view(-1), want)


def test_a_new_variant_pack_never_mixes_into_a_running_execute():
    """One AllToAllVV2 (1 rank) executed by one thread while another keeps replacing its variant pack with one of
    two layouts: every call runs on one whole pack (its output is x's first half or its second, never a mix or
    garbage), so a pack is read once per call, not field by field while another thread writes it."""
    n = 4096
    op = atb_ops.Operation("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": 0, "rankSize": 1, "backend": "shm"}))
    packs = [json.dumps({"sendCounts": [n], "sdispls": [d], "recvCounts": [n], "rdispls": [0]}) for d in (0, n)]
    op.set_varaintpack_param(packs[0])
    x = torch.arange(2 * n, dtype=torch.float32)
    halves = (x[:n], x[n:])
    out = torch.empty(1, n)
    infer = torch.empty(1, dtype=torch.int8).expand(n)
    stop = threading.Event()
    seen = [0, 0]
    errors: list[BaseException] = []

    setting = threading.Event()

    def setter() -> None:
        i = 0
        while not stop.is_set():
            op.set_varaintpack_param(packs[i % 2])
            i += 1
            if i >= 2:
                setting.set()
            time.sleep(0)  # hands the GIL over, so calls and new packs interleave finely

    def executor() -> None:
        try:
            # Calls start once the setter is switching packs and go on until both packs were seen (at least 500
            # calls): on a loaded 2-core machine a fixed count could end before the setter thread first ran.
            assert setting.wait(timeout=60), "the setter thread never ran"
            deadline = time.monotonic() + 60
            calls = 0
            while calls < 500 or (min(seen) == 0 and time.monotonic() < deadline):
                out.fill_(-1.0)
                op.execute_out([x, infer], [out])
                got = [bool(torch.equal(out[0], h)) for h in halves]
                assert any(got), f"output is neither half of x: {out[0, :4].tolist()} ... {out[0, -4:].tolist()}"
                seen[got.index(True)] += 1
                calls += 1
                time.sleep(0)  # lets the setter in between calls as well as during them
        except BaseException as e:  # noqa: BLE001 - re-raised by the test thread
            errors.append(e)
        finally:
            stop.set()

    threads = [threading.Thread(target=setter), threading.Thread(target=executor)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert seen[0] > 0 and seen[1] > 0, seen  # both packs were really in use while the calls ran
