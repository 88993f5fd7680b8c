"""The real NCCL backend on a GPU (skips without CUDA)."""
