"""A torch_atb-style AllGather script (written here, shaped like ATB's torch_atb tests), for
``python -m atb_ops run torch_atb_all_gather.py``: torch.multiprocessing.spawn, torch_atb.AllGatherParam,
Operation.forward on .npu() tensors, checked against torch.stack of every rank's input.
"""

import sys

import torch
import torch.multiprocessing as mp
import torch_atb
import torch_npu

RANK_SIZE = 2
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.int32]


def run(rank: int) -> None:
    torch_npu.npu.set_device(rank)
    param = torch_atb.AllGatherParam(rank=rank, rank_size=RANK_SIZE, rank_root=0, backend="hccl")
    op = torch_atb.Operation(param)
    assert (op.name, op.input_num, op.output_num) == ("AllGatherOperation", 1, 1), repr(op)
    for dtype in DTYPES:
        torch.manual_seed(123)
        inputs = [(torch.rand(3, 4) * 100).to(dtype) for _ in range(RANK_SIZE)]
        outputs = op.forward([inputs[rank].npu()])
        torch.npu.synchronize()
        assert len(outputs) == 1 and torch.equal(outputs[0].cpu(), torch.stack(inputs)), (dtype, outputs)
        sys.stdout.write(f"rank {rank} {str(dtype).split('.')[-1]} ok\n")
        sys.stdout.flush()
    times = torch_atb.Prof.get_prof_stats().get_run_time_stats(op.name)
    assert len(times) == len(DTYPES) and all(t >= 0 for t in times), times


if __name__ == "__main__":
    mp.spawn(run, nprocs=RANK_SIZE)
    print("all ranks passed")
