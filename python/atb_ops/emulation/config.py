"""The emulation's settings: environment variable names and their parsing, in one place.

The launcher (``python -m atb_ops run`` / ``env``) writes these variables; every process it starts
inherits them, and the emulated ``torch_npu`` reads them when it is imported.
"""

from __future__ import annotations

import os

MODE_ENV = "ATB_OPS_NPU_EMULATION"  # "cpu" or "cuda": where NPU tensors live; set by the launcher
COUNT_ENV = "ATB_OPS_NPU_COUNT"  # device_count() under --device cpu
NAME_ENV = "ATB_OPS_NPU_NAME"  # get_device_name() override
VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"  # the NPU runtime's own device list, honoured on CPU too
HOME_ENV = "ATB_HOME_PATH"  # ATB's variable: the folder holding lib/libatb_test_framework.so
ASCEND_ENV = "ASCEND_HOME_PATH"  # CANN's variable: include/{acl,hccl}, lib64/{libascendcl,libhccl}.so
TOOLKIT_ENV = "ASCEND_TOOLKIT_HOME"  # set by a real Ascend toolkit's set_env.sh
LIBRARY_PATH_ENV = "LD_LIBRARY_PATH"
# "1": torch.classes.OperationTorch.OperationTorch stays the TorchScript class (operation_class.py).
TORCHSCRIPT_CLASS_ENV = "ATB_OPS_TORCHSCRIPT_CLASS"
# Where Ascend toolkits (and ATB, in nnal) install themselves by default, as root and (under ~) as a user; one of
# these present means a real toolkit is here.
TOOLKIT_INSTALLS = ("/usr/local/Ascend/ascend-toolkit", "/usr/local/Ascend/cann", "/usr/local/Ascend/nnal",
                    "~/Ascend/ascend-toolkit", "~/Ascend/cann", "~/Ascend/nnal")
# The file that marks atb_ops' own ascend_home folder (so ASCEND_HOME_PATH pointing there is not a toolkit).
EMULATION_MARKER = "ATB_OPS_EMULATION"
DEVICES = ("cpu", "cuda")
DEFAULT_NPU_COUNT = 8  # one Atlas 800 box: ATB's multi-rank tests use up to 8 ranks


def emulated_device() -> str:
    """Where NPU tensors live in this process: ``"cpu"`` (the default) or ``"cuda"``.

    Returns:
        The value of ATB_OPS_NPU_EMULATION, or "cpu" when it is unset or empty.

    Raises:
        ValueError: When the variable holds something other than "cpu" or "cuda".
    """
    value = os.environ.get(MODE_ENV, "").strip().lower() or "cpu"
    if value not in DEVICES:
        raise ValueError(f"{MODE_ENV}={os.environ.get(MODE_ENV)!r}: expected one of {', '.join(DEVICES)}")
    return value


def cpu_npu_count() -> int:
    """How many NPUs the emulation reports under ``--device cpu``.

    Returns:
        ATB_OPS_NPU_COUNT when set; else the number of entries of ASCEND_RT_VISIBLE_DEVICES when set
        (as the NPU runtime counts); else 8 (DEFAULT_NPU_COUNT).

    Raises:
        ValueError: When ATB_OPS_NPU_COUNT is not a positive integer.
    """
    raw = os.environ.get(COUNT_ENV, "").strip()
    if not raw:
        visible = [d for d in os.environ.get(VISIBLE_ENV, "").split(",") if d.strip()]
        return len(visible) if visible else DEFAULT_NPU_COUNT
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count <= 0:
        raise ValueError(f"{COUNT_ENV}={raw!r}: expected a positive integer")
    return count


def keeps_torchscript_class() -> bool:
    """True when ATB_OPS_TORCHSCRIPT_CLASS=1 asks for the TorchScript class under the emulation."""
    return os.environ.get(TORCHSCRIPT_CLASS_ENV, "").strip() == "1"
