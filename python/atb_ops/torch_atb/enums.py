"""The enums of ATB's torch_atb that the communication params use, with ATB's names and values."""

from __future__ import annotations

from enum import IntEnum


class AtbEnum(IntEnum):
    """An IntEnum that prints like pybind11's enums: ``CommMode.COMM_MULTI_PROCESS``."""

    def __str__(self) -> str:
        return f"{_DISPLAY_NAMES.get(type(self), type(self).__name__)}.{self.name}"


class CommMode(AtbEnum):
    """atb::infer::CommMode: how the ranks of a communicator run."""

    COMM_UNDEFINED = -1
    COMM_MULTI_PROCESS = 0
    COMM_MULTI_THREAD = 1


class AclDataType(AtbEnum):
    """CANN's aclDataType (AllReduceParam.out_data_type)."""

    ACL_DT_UNDEFINED = -1
    ACL_FLOAT = 0
    ACL_FLOAT16 = 1
    ACL_INT8 = 2
    ACL_INT32 = 3
    ACL_UINT8 = 4
    ACL_INT16 = 6
    ACL_UINT16 = 7
    ACL_UINT32 = 8
    ACL_INT64 = 9
    ACL_UINT64 = 10
    ACL_DOUBLE = 11
    ACL_BOOL = 12
    ACL_STRING = 13
    ACL_COMPLEX64 = 16
    ACL_COMPLEX128 = 17
    ACL_BF16 = 27
    ACL_INT4 = 29
    ACL_UINT1 = 30
    ACL_COMPLEX32 = 33


class AclFormat(AtbEnum):
    """CANN's aclFormat (storage formats; only the plain ones mean anything off the NPU)."""

    ACL_FORMAT_UNDEFINED = -1
    ACL_FORMAT_NCHW = 0
    ACL_FORMAT_NHWC = 1
    ACL_FORMAT_ND = 2
    ACL_FORMAT_NC1HWC0 = 3
    ACL_FORMAT_FRACTAL_Z = 4
    ACL_FORMAT_NC1HWC0_C04 = 12
    ACL_FORMAT_HWCN = 16
    ACL_FORMAT_NDHWC = 27
    ACL_FORMAT_FRACTAL_NZ = 29
    ACL_FORMAT_NCDHW = 30
    ACL_FORMAT_NDC1HWC0 = 32
    ACL_FRACTAL_Z_3D = 33


class AllReduceQuantType(AtbEnum):
    """atb::infer::AllReduceParam::QuantType, available as ``AllReduceParam.QuantType``."""

    QUANT_TYPE_UNQUANT = 0
    QUANT_TYPE_UNDEFINED = 0  # ATB gives the default both names
    QUANT_TYPE_PER_TENSOR = 1
    QUANT_TYPE_PER_CHANNEL = 2
    QUANT_TYPE_MAX = 3


class ParallelType(AtbEnum):
    """atb::infer::LinearParallelParam::ParallelType, available as ``LinearParallelParam.ParallelType``."""

    UNDEFINED = -1
    LINEAR_ALL_REDUCE = 0
    LINEAR_REDUCE_SCATTER = 1
    ALL_GATHER_LINEAR = 2
    PURE_LINEAR = 3
    ALL_GATHER_LINEAR_REDUCE_SCATTER = 4
    ALLTOALLVC_ALL_GATHER_GMM = 5
    GMM_REDUCE_SCATTER_ALLTOALLVC = 6
    MAX = 7


class LinearParallelQuantType(AtbEnum):
    """atb::infer::LinearParallelParam::QuantType, available as ``LinearParallelParam.QuantType``."""

    QUANT_TYPE_UNDEFINED = -1
    QUANT_TYPE_UNQUANT = -1  # ATB gives the default both names
    QUANT_TYPE_PER_TENSOR = 0
    QUANT_TYPE_PER_CHANNEL = 1
    QUANT_TYPE_PER_GROUP = 2
    QUANT_TYPE_PER_TOKEN = 3
    QUANT_TYPE_MAX = 4


_DISPLAY_NAMES = {AllReduceQuantType: "QuantType", LinearParallelQuantType: "QuantType"}


def exported_values() -> dict[str, IntEnum]:
    """The enum members that ATB's torch_atb also exports at module level (``torch_atb.ACL_FLOAT16``)."""
    values: dict[str, IntEnum] = {}
    for enum in (CommMode, AclDataType, AclFormat):
        values.update(enum.__members__)
    return values
