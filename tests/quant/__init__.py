"""atb_ops.quant: the int8 kernels and quantized_all_reduce."""
