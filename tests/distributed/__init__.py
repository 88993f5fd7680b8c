"""atb_ops.distributed, the framework-style API: the seeds' examples, random layouts, autograd, both CPU paths, the
MoE example."""
