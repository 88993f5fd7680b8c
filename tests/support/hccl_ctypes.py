"""HCCL's C API on CPU (atb_ops' libhccl.so) through ctypes, for rank programs run in fresh interpreters."""

from __future__ import annotations

import ctypes
import json
import os
import sys

import atb_ops

HCCL_DATA_TYPE_FP32 = 4
HCCL_REDUCE_SUM = 0
HCCL_SEND = 0
HCCL_RECV = 1


class HcclSendRecvItem(ctypes.Structure):
    """One entry of HcclBatchSendRecv's list (hccl_types.h)."""

    _fields_ = [("sendRecvType", ctypes.c_int), ("buf", ctypes.c_void_p), ("count", ctypes.c_uint64),
                ("dataType", ctypes.c_int), ("remoteRank", ctypes.c_uint32)]


def hccl() -> ctypes.CDLL:
    """The library, with its last-error text readable (atbOpsHcclCpuLastError)."""
    lib = ctypes.CDLL(os.path.join(os.path.dirname(atb_ops.__file__), "ascend_home", "lib64", "libhccl.so"))
    lib.atbOpsHcclCpuLastError.restype = ctypes.c_char_p
    return lib


def check(lib: ctypes.CDLL, rc: int, what: str) -> None:
    """Ends the rank with {"error": ...} as its report line (exit 0: the test reads the report) unless rc is 0."""
    if rc != 0:
        print(json.dumps({"error": f"{what} rc {rc}: " + lib.atbOpsHcclCpuLastError().decode()}))
        sys.exit(0)
