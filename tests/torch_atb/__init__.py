"""atb_ops.torch_atb: ATB 8.x's Python API for the communication operators."""
