"""The torch.distributed backend "atb_ops"."""
