"""The NPU emulation: ATB / torch_npu scripts run unchanged on CPU ranks or CUDA.

``python -m atb_ops run [--device cpu|cuda] SCRIPT`` (launcher) sets up an environment in which
``import torch_npu`` loads the emulation (runtime, npu, patches, formats), ``import torch_atb`` gives
atb_ops.torch_atb, and ATB_HOME_PATH (atb_home) holds ATB's library names. Importing this package
changes nothing: plain ``import torch`` / ``import atb_ops`` are unaffected.
"""
