"""torch_npu, emulated by atb_ops for ``python -m atb_ops run`` (see atb_ops.emulation).

Importing it turns the emulation on in this process: ``torch.npu`` / ``torch_npu.npu``, ``Tensor.npu()``,
``"npu:N"`` device names, ``npu_format_cast`` for plain layouts. It also imports atb_ops, which
registers ``torch.classes.OperationTorch.OperationTorch`` (the classes that ATB_HOME_PATH's
lib/libatb_test_framework.so provides), so scripts may load that library before or after.
"""

import sys

import torch

import atb_ops  # noqa: F401  (loads atb_ops._C: OperationTorch and the communication backends)
from atb_ops.emulation import formats as _formats
from atb_ops.emulation import npu
from atb_ops.emulation import runtime as _runtime

_runtime.activate()
sys.modules[__name__ + ".npu"] = npu

npu_format_cast = _formats.npu_format_cast
get_npu_format = _formats.get_npu_format
__version__ = torch.__version__.split("+")[0] + "+atb.ops.emulation"
__all__ = ["get_npu_format", "npu", "npu_format_cast"]
