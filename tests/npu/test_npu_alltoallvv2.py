"""AllToAllVV2Operation with backend "hccl" on real Ascend NPUs, mirroring seed 004's test.

Two ranks are spawned; each calls torch_npu.npu.set_device(rank) and runs the seed's example for the
seven dtypes (int8, int16, int32, int64, float32, float16, bfloat16) against its golden tensors, then a
random pattern (gapped send displacements, shuffled receive order) through both alltoallv paths
(HcclAlltoAllV, and HcclBatchSendRecv under ATB_OPS_HCCL_ALLTOALLV=p2p), on 2 ranks and on up to 4.

These tests need torch_npu, the Ascend toolkit and at least two NPUs; elsewhere they SKIP with the
reason. torch_npu is only ever probed in a child process: without the toolkit, importing it would break
torch in this one. The project has not run them on NPU hardware (see docs/hccl.md).
``test_harness_on_cpu_ranks`` runs the same worker code on CPU ranks (where "hccl" falls back to "shm"),
so the harness and goldens are checked everywhere; it says nothing about HCCL.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import traceback
import uuid
from typing import Any

import pytest
import torch

from tests.support.launch import run_spawned

SEED_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float32, torch.float16, torch.bfloat16]

# Seed 004's example, verbatim: per rank x, sendCounts, sdispls, recvCounts, rdispls and the golden output.
SEED_INPUTS = [[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 1, 2], [3, 4, 6]]]
SEED_SENDCOUNT = [[2, 4], [2, 1]]
SEED_SENDDISP = [[0, 2], [0, 2]]
SEED_RECVOUT = [[2, 2], [4, 1]]
SEED_RECVDIS = [[0, 2], [0, 4]]
SEED_GOLDEN = [[[0, 1, 0, 1]], [[2, 3, 4, 5, 2]]]


def _npu_skip_reason() -> str | None:
    """Why the NPU tests cannot run here, or None when they can."""
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed (no Ascend NPU stack here)"
    if not (os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME_PATH")):
        return "Ascend toolkit not found (ASCEND_TOOLKIT_HOME / ASCEND_HOME_PATH unset; source set_env.sh)"
    probe = subprocess.run(
        [sys.executable, "-c", "import torch, torch_npu; print(torch_npu.npu.device_count())"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        return f"torch_npu does not import here: {last}"
    count = int(probe.stdout.strip().splitlines()[-1])
    if count < 2:
        return f"needs 2 NPUs, torch_npu sees {count}"
    return None


NPU_SKIP_REASON = _npu_skip_reason()
needs_npus = pytest.mark.skipif(NPU_SKIP_REASON is not None, reason=str(NPU_SKIP_REASON))


def random_pattern(world_size: int, seed: int) -> list[dict[str, Any]]:
    """Per rank: counts (zeros included), send displacements with gaps, receive blocks in shuffled order.

    Receive regions tile the output exactly: ATB's output is [1, sum(recvCounts)].
    """
    rng = random.Random(seed)
    matrix = [[rng.randint(0, 6) for _ in range(world_size)] for _ in range(world_size)]
    ranks = []
    for r in range(world_size):
        send_counts = matrix[r]
        recv_counts = [matrix[s][r] for s in range(world_size)]
        sdispls, offset = [0] * world_size, 0
        for i in rng.sample(range(world_size), world_size):
            offset += rng.randint(0, 3)
            sdispls[i], offset = offset, offset + send_counts[i]
        rdispls, offset = [0] * world_size, 0
        for i in rng.sample(range(world_size), world_size):
            rdispls[i], offset = offset, offset + recv_counts[i]
        numel = max([d + c for d, c in zip(sdispls, send_counts, strict=True)] + [0]) + 1
        ranks.append(
            {
                "send_counts": send_counts,
                "sdispls": sdispls,
                "recv_counts": recv_counts,
                "rdispls": rdispls,
                "numel": numel,
            }
        )
    return ranks


def pattern_input(rank: int, numel: int, dtype: torch.dtype) -> torch.Tensor:
    """Values that say which rank and index they came from, exact in every seed dtype."""
    return ((torch.arange(numel) + 17 * rank) % 120 - 60).to(dtype)


def pattern_golden(ranks: list[dict[str, Any]], rank: int, dtype: torch.dtype) -> torch.Tensor:
    """What rank must receive, built the way seed 004 builds gold_outtensor, honouring rdispls."""
    mine = ranks[rank]
    out = torch.empty(sum(mine["recv_counts"]), dtype=dtype)
    for src, theirs in enumerate(ranks):
        x = pattern_input(src, theirs["numel"], dtype)
        count, start = theirs["send_counts"][rank], theirs["sdispls"][rank]
        assert count == mine["recv_counts"][src]
        out[mine["rdispls"][src] : mine["rdispls"][src] + count] = x[start : start + count]
    return out.reshape(1, -1)


def _worker(rank: int, world_size: int, device: str, case: str, domain: str, path: str, queue: Any) -> None:
    """One rank, as in seed 004's main_worker; reports (rank, "" or its failure, None) to the parent."""
    try:
        os.environ["ATB_OPS_HCCL_ALLTOALLV"] = path
        if device == "npu":
            import torch_npu

            torch_npu.npu.set_device(int(rank))
        import atb_ops

        if device == "npu":
            assert "hccl" in atb_ops.backends(), (
                f"torch_npu and the toolkit are here but atb_ops was built without backend 'hccl' "
                f"(built: {atb_ops.backends()}); rebuild with ASCEND_TOOLKIT_HOME set"
            )

        def to_device(t: torch.Tensor) -> torch.Tensor:
            return t.npu() if device == "npu" else t

        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
        param = {"rank": rank, "rankSize": world_size, "rankRoot": 0, "backend": "hccl", "commDomain": domain}
        op.set_param(json.dumps(param))
        if case == "seed":
            layout = [SEED_SENDCOUNT[rank], SEED_SENDDISP[rank], SEED_RECVOUT[rank], SEED_RECVDIS[rank]]
            for dtype in SEED_DTYPES:
                op.set_varaintpack_param(
                    json.dumps(dict(zip(["sendCounts", "sdispls", "recvCounts", "rdispls"], layout, strict=True)))
                )
                counts = [to_device(torch.tensor(v, dtype=torch.int64)) for v in layout]
                x = to_device(torch.tensor(SEED_INPUTS[rank], dtype=dtype))
                infer = torch.zeros(sum(SEED_RECVOUT[rank]), dtype=torch.int8)
                (out,) = op.execute([x, *counts, infer])
                if device == "npu":
                    torch.npu.synchronize()
                want = torch.tensor(SEED_GOLDEN[rank], dtype=dtype)
                assert out.shape == want.shape and out.dtype == dtype, (dtype, out.shape, out.dtype)
                assert torch.equal(out.cpu(), want), f"{dtype}: got {out.cpu().tolist()}, want {want.tolist()}"
        else:
            ranks = random_pattern(world_size, seed=int(case))
            p = ranks[rank]
            for dtype in SEED_DTYPES:
                x = to_device(pattern_input(rank, p["numel"], dtype))
                counts = [
                    to_device(torch.tensor(p[k], dtype=torch.int64))
                    for k in ("send_counts", "sdispls", "recv_counts", "rdispls")
                ]
                infer = torch.zeros(sum(p["recv_counts"]), dtype=torch.int8)
                (out,) = op.execute([x, *counts, infer])
                if device == "npu":
                    torch.npu.synchronize()
                want = pattern_golden(ranks, rank, dtype)
                assert torch.equal(out.cpu(), want), f"{dtype}: got {out.cpu().tolist()}, want {want.tolist()}"
        queue.put((rank, "", None))
    except BaseException:  # noqa: BLE001  (every failure goes to the parent, which fails the test)
        queue.put((rank, traceback.format_exc(), None))


def run_world(world_size: int, device: str, case: str, path: str = "alltoallv") -> None:
    """Spawn world_size ranks (seed 004 uses Process + spawn) and fail with every rank's error and exit status."""
    domain = f"npu-test-{uuid.uuid4().hex[:8]}"
    run_spawned(_worker, world_size, (device, case, domain, path), timeout_s=600)


@needs_npus
def test_all_to_allvv2_operation() -> None:
    """Seed 004: two NPUs, seven dtypes, golden compare."""
    run_world(2, "npu", "seed")


@needs_npus
@pytest.mark.parametrize("path", ["alltoallv", "p2p"])
def test_random_pattern_two_ranks(path: str) -> None:
    run_world(2, "npu", "123", path)


@needs_npus
@pytest.mark.parametrize("path", ["alltoallv", "p2p"])
def test_random_pattern_more_ranks(path: str) -> None:
    """More than two ranks: where some CANN 8.3 releases' HcclAlltoAllV was reported to return zeros."""
    count = int(
        subprocess.run(
            [sys.executable, "-c", "import torch, torch_npu; print(torch_npu.npu.device_count())"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
    )
    if count < 3:
        pytest.skip(f"needs 3 NPUs, torch_npu sees {count}")
    run_world(min(count, 4), "npu", "7", path)


@pytest.mark.parametrize("case", ["seed", "123"])
def test_harness_on_cpu_ranks(case: str) -> None:
    """The worker code and goldens above, on CPU ranks ("hccl" falls back to "shm"); not an HCCL test."""
    run_world(2, "cpu", case)
