"""torch_atb (ATB's Python API), as provided by atb_ops under ``python -m atb_ops run``.

The same objects as ``atb_ops.torch_atb``. Like ATB's own module it needs the NPU runtime, so it
imports torch_npu (here: the emulation) first.
"""

import torch_npu  # noqa: F401  (turns the NPU emulation on, as ATB's torch_atb needs torch_npu)

from atb_ops.torch_atb import *  # noqa: F403
from atb_ops.torch_atb import __all__, __getattr__  # noqa: F401  (missing names say why)
