"""The NPU emulation: `python -m atb_ops run`, the emulated torch_npu and ATB_HOME_PATH, ATB-shaped scripts and ATB's
own tests run unchanged."""
