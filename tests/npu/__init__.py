"""The hccl backend on real Ascend NPUs (skips without torch_npu and NPUs)."""
