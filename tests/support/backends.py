"""The CPU backends every multi-rank suite runs on, and how a rank selects one.

"hccl" is atb_ops' HCCL backend (the same logic that drives NPUs) over HCCL's C API as atb_ops implements it
on CPU ranks; it exists where the build had HCCL's headers (libatb.so of the emulation's ATB_HOME_PATH).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

import atb_ops

HCCL_RUNNER = Path(atb_ops.__file__).resolve().parent / "atb_home" / "lib" / "libatb.so"
HCCL_ON_CPU = HCCL_RUNNER.is_file()
_NO_HCCL = "atb_home/lib/libatb.so is missing from this install (every build makes it: rebuild atb_ops)"

CPU_BACKENDS = [
    "shm",
    "gloo",
    pytest.param("hccl", marks=pytest.mark.skipif(not HCCL_ON_CPU, reason=_NO_HCCL)),
]
needs_hccl_on_cpu = pytest.mark.skipif(not HCCL_ON_CPU, reason=_NO_HCCL)


# Why a test that drives the vendor mocks skips (the test command always builds them).
TESTING_MOCKS = "atb_ops._testing (the vendor mocks) is built on request: ATB_OPS_TESTING=1, as scripts/setup.sh does"


def use_backend(backend: str) -> None:
    """In a rank process: make `backend` runnable there (loads the HCCL runner for "hccl", which then serves
    CPU tensors instead of the shm fallback) and check that it really is."""
    if backend in ("hccl", "lccl"):
        ctypes.CDLL(str(HCCL_RUNNER))
        assert "hccl (cpu)" in atb_ops.backends(), atb_ops.backends()
