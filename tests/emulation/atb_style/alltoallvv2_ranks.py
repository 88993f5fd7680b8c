"""An ATB-style AllToAllVV2 test script (written here, shaped like ATB's), for ``python -m atb_ops run``.

    python alltoallvv2_ranks.py spawn|forkserver|mp_spawn|subprocess
    torchrun --standalone --nproc_per_node 2 alltoallvv2_ranks.py torchrun

Two ranks run seed 004's example for several dtypes the way ATB's scripts do: the library loaded from
ATB_HOME_PATH, torch_npu.npu.set_device(rank), .npu() on the data and on the host count tensors,
torch.npu.synchronize(). Each rank checks its output against a golden computed here from the layout,
prints "rank R DTYPE ok", and the parent checks every child's exit status (exit 1 if any failed).
"""

import json
import os
import subprocess
import sys

import torch
import torch_npu

torch.classes.load_library(os.path.join(os.environ["ATB_HOME_PATH"], "lib/libatb_test_framework.so"))

WORLD_SIZE = 2
INPUTS = [[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 1, 2], [3, 4, 6]]]
SEND_COUNTS = [[2, 4], [2, 1]]
SDISPLS = [[0, 2], [0, 2]]
RECV_COUNTS = [[2, 2], [4, 1]]
RDISPLS = [[0, 2], [0, 4]]
SEED_OUTPUTS = [[[0, 1, 0, 1]], [[2, 3, 4, 5, 2]]]  # the seed's stated outputs
DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32]


def golden(rank: int) -> list[int]:
    """What rank receives: from each source its send region for this rank, placed at rdispls."""
    out = [None] * sum(RECV_COUNTS[rank])
    for src in range(WORLD_SIZE):
        flat = [v for row in INPUTS[src] for v in row]
        start, count = SDISPLS[src][rank], SEND_COUNTS[src][rank]
        assert count == RECV_COUNTS[rank][src]
        out[RDISPLS[rank][src] : RDISPLS[rank][src] + count] = flat[start : start + count]
    return out


def run_rank(rank: int, world_size: int = WORLD_SIZE) -> None:
    torch_npu.npu.set_device(rank)
    assert torch.npu.current_device() == rank
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "rankRoot": 0, "backend": "hccl"}))
    expected = golden(rank)
    assert [expected] == SEED_OUTPUTS[rank]
    for dtype in DTYPES:
        x = torch.tensor(INPUTS[rank], dtype=dtype).npu()
        counts = [SEND_COUNTS[rank], SDISPLS[rank], RECV_COUNTS[rank], RDISPLS[rank]]
        host = [torch.tensor(c, dtype=torch.int64).npu() for c in counts]
        infer = torch.zeros(sum(RECV_COUNTS[rank]), dtype=torch.int8).npu()
        out = op.execute([x, *host, infer])[0]
        torch.npu.synchronize()
        assert out.shape == (1, len(expected)) and out.dtype == dtype, (out.shape, out.dtype)
        assert out.cpu().tolist() == [expected], (dtype, out)
        sys.stdout.write(f"rank {rank} {str(dtype).split('.')[-1]} ok\n")
        sys.stdout.flush()


def mp_spawn_entry(rank: int) -> None:
    run_rank(rank)


def main() -> int:
    mode = sys.argv[1]
    if mode == "torchrun":
        run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        return 0
    if mode == "child":
        run_rank(int(sys.argv[2]))
        return 0
    if mode == "mp_spawn":
        torch.multiprocessing.spawn(mp_spawn_entry, nprocs=WORLD_SIZE)  # raises if a rank fails
        codes = [0] * WORLD_SIZE
    elif mode == "subprocess":
        procs = [subprocess.Popen([sys.executable, __file__, "child", str(r)]) for r in range(WORLD_SIZE)]
        codes = [p.wait(timeout=240) for p in procs]
    else:
        ctx = torch.multiprocessing.get_context(mode)
        procs = [ctx.Process(target=run_rank, args=(r,)) for r in range(WORLD_SIZE)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=240)
        codes = [p.exitcode for p in procs]
    print(f"exit codes {codes}", flush=True)
    return 0 if codes == [0] * WORLD_SIZE else 1


if __name__ == "__main__":
    sys.exit(main())
