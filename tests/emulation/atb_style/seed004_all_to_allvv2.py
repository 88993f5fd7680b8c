# ruff: noqa: F841, E501, B007  (the seed's lines are kept as they are)
# Seed 004's AllToAllVV2 test script, completed only with the lines the seed elides: the imports, the
# library load from ATB_HOME_PATH (as every ATB test script does), golden_compare,
# compute_out_tensor_dim1, the sendcount/senddisp/recvout/recvdis tables of the seed's example and the
# unittest class around test_all_to_allvv2_operation. main_worker and the test body are the seed's.
# Run unchanged on an NPU, or here with: python -m atb_ops run -m unittest seed004_all_to_allvv2.py
import json
import os
import unittest
from multiprocessing import Process, set_start_method

import numpy as np
import torch
import torch_npu

ATB_HOME_PATH = os.environ.get("ATB_HOME_PATH")
if ATB_HOME_PATH is None:
    raise RuntimeError("env ATB_HOME_PATH not exist, source set_env.sh")
torch.classes.load_library(os.path.join(ATB_HOME_PATH, "lib/libatb_test_framework.so"))

# The seed's example, per rank: counts and displacements in elements of x flattened.
sendcount = [[2, 4], [2, 1]]
senddisp = [[0, 2], [0, 2]]
recvout = [[2, 2], [4, 1]]
recvdis = [[0, 2], [0, 4]]


def golden_compare(out_tensor, golden_out_tensor, rtol=0.001, atol=0.001):
    return torch.allclose(out_tensor, golden_out_tensor, rtol=rtol, atol=atol)


def compute_out_tensor_dim1(recv_counts):
    # tensorForInferShape: its length is the output's (sum of recvCounts); its values are not read.
    return torch.zeros(sum(recv_counts), dtype=torch.int8).npu()


def main_worker(rank, world_size,inTensorDtypes, sizes, random_seed):
    # init process group
    torch_npu.npu.set_device(int(rank))
    print(f'========== Process {rank} started, using device npu:{rank}.==========')
    # init all_to_allvv2_operation
    op_name = "AllToAllVV2Operation"
    all_to_allvv2_operation = torch.classes.OperationTorch.OperationTorch(
        "AllToAllVV2Operation")
    torch.manual_seed(random_seed)
    low = -100
    high = 100
    for inTensorDtype in inTensorDtypes:
        inTensors=[torch.tensor([[0,1,2,3],[4,5,6,7]],dtype=inTensorDtype),torch.tensor([[0,1,2],[3,4,6]],dtype=inTensorDtype)]
        GoldenTensors=[torch.tensor([[0,1,0,1]],dtype=inTensorDtype),torch.tensor([2,3,4,5,2],dtype=inTensorDtype)]
        acl_param = json.dumps({"rank": rank, "rankSize": world_size,"rankRoot": 0, "backend": "hccl"})
        run_param = json.dumps({"sendCounts": sendcount[rank], "sdispls": senddisp[rank], "recvCounts": recvout[rank], "rdispls": recvdis[rank]})
        host_list = [sendcount[rank], senddisp[rank], recvout[rank], recvdis[rank]]
        host_tensors = [np.array(tensor) for tensor in host_list]
        host_tensors = [torch.from_numpy(tensor).to(torch.int64) for tensor in host_tensors]
        host_tensors = [tensor.npu() for tensor in host_tensors]
        all_to_allvv2_operation.set_param(acl_param)
        all_to_allvv2_operation.set_varaintpack_param(run_param)
        print(f"host_tensors={host_tensors}")
        print(f"inTensors[rank].npu()={inTensors[rank].npu()}")
        print(f"host_tensors[0]={host_tensors[0]}")
        print(f"host_tensors[1]={host_tensors[1]}")
        print(f"host_tensors[2]={host_tensors[2]}")
        print(f"host_tensors[3]={host_tensors[3]}")
        atb_input5 = compute_out_tensor_dim1(recvout[rank])
        print(f"atb_input5 = {atb_input5}")
        result1 = all_to_allvv2_operation.execute(
            [inTensors[rank].npu(), host_tensors[0], host_tensors[1], host_tensors[2], host_tensors[3], atb_input5])
        print(f"\n ==========\nresult1={result1}\n ==========\n")
        acl_out_tensor = result1[0]
        print(f"\n ==========\nacl_out_tensor={acl_out_tensor}\n ==========\n")
        torch.npu.synchronize()
        # assert result
        assert golden_compare(acl_out_tensor.cpu(), GoldenTensors[rank])


class TestAllToAllVV2(unittest.TestCase):
    def test_all_to_allvv2_operation(self):
        world_size = 2
        random_seed = 123
        sizes = [[3, 4]]
        set_start_method('spawn', force=True)
        process_list = []
        inTensorDtypes = [torch.int8, torch.int16, torch.int32, torch.int64, torch.float32, torch.float16, torch.bfloat16]
        for i in range(world_size):
            p = Process(target=main_worker,args=(i,world_size, inTensorDtypes, sizes, random_seed))
            p.start()
            process_list.append(p)
        for i in process_list:
            p.join()


if __name__ == "__main__":
    unittest.main()
