"""torch_atb's param classes for ATB's communication operators (and LinearParallelOperation).

Each class has ATB 8.x's snake_case keyword arguments in ATB's positional order, ATB torch_atb's
defaults (note: ``rank`` defaults to 0 there, not to the C++ struct's -1; ReduceScatterParam's
``backend`` defaults to "lccl"), and attributes that check their type on assignment, as pybind11's
``def_readwrite`` does. ``to_json()`` gives the param as the JSON keys of ATB's test framework, which
``torch.classes.OperationTorch.OperationTorch(name).set_param`` takes.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from enum import IntEnum
from typing import Any, ClassVar

from atb_ops.torch_atb.enums import (
    AclDataType,
    AllReduceQuantType,
    CommMode,
    LinearParallelQuantType,
    ParallelType,
)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
# The narrow integer fields of LinearParallelParam's nested structs, as C++ types.
_SMALL_INTS = {"uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1), "int8": (-(2**7), 2**7 - 1),
               "int16": (-(2**15), 2**15 - 1)}


def _spec(json_key: str, kind: Any, default: Any = MISSING, factory: Any = MISSING) -> Any:
    """A field: its ATB JSON key and its kind ("int", "int64", "str", "bool", "comm", "int_list" or an enum)."""
    return field(default=default, default_factory=factory, metadata={"json": json_key, "kind": kind})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _coerce(owner: str, name: str, kind: Any, value: Any) -> Any:
    """The value converted to what the field holds; TypeError/ValueError naming the field otherwise."""
    where = f"{owner}.{name}"
    if isinstance(kind, type) and issubclass(kind, IntEnum):
        if isinstance(value, kind):
            return value
        if _is_int(value):
            try:
                return kind(value)
            except ValueError:
                valid = ", ".join(f"{m.name}={m.value}" for m in kind)
                raise ValueError(f"{where}: {value} is not a {kind.__name__} ({valid})") from None
        raise TypeError(f"{where}: expected {kind.__name__}, got {type(value).__name__} {value!r}")
    if isinstance(kind, type) and issubclass(kind, Struct):
        if not isinstance(value, kind):
            raise TypeError(f"{where}: expected {kind.__name__}, got {type(value).__name__} {value!r}")
        return value
    if kind in ("int", "int64") or kind in _SMALL_INTS:
        low, high = _INT32 if kind == "int" else _SMALL_INTS.get(kind, _INT64)
        if not _is_int(value):
            raise TypeError(f"{where}: expected int, got {type(value).__name__} {value!r}")
        if not low <= value <= high:
            c_type = {"int": "int32", "int64": "int64"}.get(kind, kind)
            raise ValueError(f"{where}: {value} does not fit in {c_type}")
        return int(value)
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected str, got {type(value).__name__} {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{where}: expected bool, got {type(value).__name__} {value!r}")
        return value
    if kind == "comm":
        if value is None:
            return None
        if not _is_int(value) or not 0 <= value < 2**64:
            raise TypeError(f"{where}: expected None or a communicator handle (int >= 0), got {value!r}")
        return int(value)
    if kind == "int_list":
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{where}: expected a list of int, got {type(value).__name__} {value!r}")
        return [_coerce(owner, f"{name}[{i}]", "int64", v) for i, v in enumerate(value)]
    raise AssertionError(f"unknown field kind {kind!r}")


def _json_value(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_json()
    if isinstance(value, IntEnum):
        return int(value)
    if isinstance(value, list):
        return list(value)
    return value


class _Fields:
    """Attributes that check their type on assignment, from dataclass fields declared with _spec."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        spec = self._field_specs().get(name)
        if spec is not None:
            value = _coerce(type(self).__name__, name, spec[1], value)
        object.__setattr__(self, name, value)

    @classmethod
    def _field_specs(cls) -> dict[str, tuple[str, Any]]:
        specs = cls.__dict__.get("_specs_cache")
        if specs is None:
            specs = {f.name: (f.metadata["json"], f.metadata["kind"]) for f in fields(cls)}  # type: ignore[arg-type]
            type.__setattr__(cls, "_specs_cache", specs)
        return specs


class Struct(_Fields):
    """A nested struct of a param (LinearParallelParam.TwoDimTPInfo, .MoeInfo), written as a JSON object."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """The struct as ATB's JSON keys."""
        return {key: _json_value(getattr(self, name)) for name, (key, _) in self._field_specs().items()}


class CommParam(_Fields):
    """What every communication param has: its operator's name, tensor counts and JSON form."""

    __slots__ = ()
    OP_NAME: ClassVar[str] = ""
    INPUT_NUM: ClassVar[int] = 1
    OUTPUT_NUM: ClassVar[int] = 1

    def to_json(self) -> dict[str, Any]:
        """The param as ATB's JSON keys (camelCase), e.g. {"rank": 0, "rankSize": 2, ...}.

        Returns:
            A dict for json.dumps; hcclComm is the handle as an integer (0: none, the operation makes one).
        """
        out: dict[str, Any] = {}
        for name, (key, kind) in self._field_specs().items():
            value = getattr(self, name)
            out[key] = int(value or 0) if kind == "comm" else _json_value(value)
        return out

    def io_numbers(self) -> tuple[int, int]:
        """(input_num, output_num) of the operation this param makes, as ATB's GetInputNum/GetOutputNum."""
        return self.INPUT_NUM, self.OUTPUT_NUM

    def __repr__(self) -> str:
        return f"{type(self).__name__}: {json.dumps(self.to_json(), sort_keys=True, separators=(',', ':'))}"


_MP = CommMode.COMM_MULTI_PROCESS


@dataclass(slots=True, repr=False)
class AllGatherParam(CommParam):
    """AllGatherOperation: input x, output [rank_size, *x.shape]."""

    OP_NAME: ClassVar[str] = "AllGatherOperation"
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    backend: str = _spec("backend", "str", "hccl")
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    rank_table_file: str = _spec("rankTableFile", "str", "")
    comm_domain: str = _spec("commDomain", "str", "")


@dataclass(slots=True, repr=False)
class AllReduceParam(CommParam):
    """AllReduceOperation: input x (with quant_type 1 or 2 also scale and offset), output like x."""

    OP_NAME: ClassVar[str] = "AllReduceOperation"
    QuantType: ClassVar[type[AllReduceQuantType]] = AllReduceQuantType
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    all_reduce_type: str = _spec("allReduceType", "str", "sum")
    backend: str = _spec("backend", "str", "hccl")
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    rank_table_file: str = _spec("rankTableFile", "str", "")
    comm_domain: str = _spec("commDomain", "str", "")
    quant_type: AllReduceQuantType = _spec("quantType", AllReduceQuantType, AllReduceQuantType.QUANT_TYPE_UNQUANT)
    out_data_type: AclDataType = _spec("outDataType", AclDataType, AclDataType.ACL_DT_UNDEFINED)

    def io_numbers(self) -> tuple[int, int]:
        """(3, 1) with per-tensor or per-channel quantisation (x, scale, offset), else (1, 1)."""
        quantised = self.quant_type in (
            AllReduceQuantType.QUANT_TYPE_PER_TENSOR,
            AllReduceQuantType.QUANT_TYPE_PER_CHANNEL,
        )
        return (3 if quantised else 1), 1


@dataclass(slots=True, repr=False)
class BroadcastParam(CommParam):
    """BroadcastOperation: input x, broadcast in place from rank_root; no output tensor."""

    OP_NAME: ClassVar[str] = "BroadcastOperation"
    OUTPUT_NUM: ClassVar[int] = 0
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    backend: str = _spec("backend", "str", "hccl")
    rank_table_file: str = _spec("rankTableFile", "str", "")
    comm_domain: str = _spec("commDomain", "str", "")


@dataclass(slots=True, repr=False)
class ReduceScatterParam(CommParam):
    """ReduceScatterOperation: input x, output this rank's reduced 1/rank_size of x."""

    OP_NAME: ClassVar[str] = "ReduceScatterOperation"
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    reduce_type: str = _spec("reduceType", "str", "sum")
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    backend: str = _spec("backend", "str", "lccl")
    rank_table_file: str = _spec("rankTableFile", "str", "")
    comm_domain: str = _spec("commDomain", "str", "")


@dataclass(slots=True, repr=False)
class ReduceScatterVParam(CommParam):
    """ReduceScatterVOperation: five inputs (x, sendCounts, sdispls, recvCount, y), one output."""

    OP_NAME: ClassVar[str] = "ReduceScatterVOperation"
    INPUT_NUM: ClassVar[int] = 5
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    send_counts: list[int] = _spec("sendCounts", "int_list", factory=list)
    sdispls: list[int] = _spec("sdispls", "int_list", factory=list)
    recv_count: int = _spec("recvCount", "int64", 0)
    reduce_type: str = _spec("reduceType", "str", "sum")
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    backend: str = _spec("backend", "str", "hccl")
    rank_table_file: str = _spec("rankTableFile", "str", "")
    comm_domain: str = _spec("commDomain", "str", "")


@dataclass(slots=True, repr=False)
class AllToAllParam(CommParam):
    """AllToAllOperation: input x, output like x (chunks exchanged; transpose: column blocks, lccl)."""

    OP_NAME: ClassVar[str] = "AllToAllOperation"
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    backend: str = _spec("backend", "str", "hccl")
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    rank_table_file: str = _spec("rankTableFile", "str", "")
    comm_domain: str = _spec("commDomain", "str", "")
    transpose: bool = _spec("transpose", "bool", False)


@dataclass(slots=True, repr=False)
class TwoDimTPInfo(Struct):
    """LinearParallelParam.TwoDimTPInfo: the 2-D TP groups of ALL_GATHER_LINEAR_REDUCE_SCATTER."""

    ag_dim: int = _spec("agDim", "uint16", 0)
    rs_dim: int = _spec("rsDim", "uint16", 0)
    inner_dim_is_ag: int = _spec("innerDimIsAg", "uint8", 1)


@dataclass(slots=True, repr=False)
class MoeInfo(Struct):
    """LinearParallelParam.MoeInfo (ATB's keyword names are camelCase here, and its defaults 0 when made alone;
    a LinearParallelParam's own default is the C++ struct's 1, 1, 1)."""

    localExpertNums: int = _spec("localExpertNums", "int16", 0)  # noqa: N815  (ATB's name)
    epSize: int = _spec("epSize", "int8", 0)  # noqa: N815
    tpSize: int = _spec("tpSize", "int8", 0)  # noqa: N815


@dataclass(slots=True, repr=False)
class LinearParallelParam(CommParam):
    """LinearParallelOperation: a matmul fused with its communication (ATB's LinearParallelParam).

    ATB's torch_atb lists ParallelType up to ALL_GATHER_LINEAR_REDUCE_SCATTER (4); here the MoE types 5 and 6
    are there too (ATB's C++ enum has them).
    """

    OP_NAME: ClassVar[str] = "LinearParallelOperation"
    ParallelType: ClassVar[type[ParallelType]] = ParallelType
    QuantType: ClassVar[type[LinearParallelQuantType]] = LinearParallelQuantType
    TwoDimTPInfo: ClassVar[type[TwoDimTPInfo]] = TwoDimTPInfo
    MoeInfo: ClassVar[type[MoeInfo]] = MoeInfo
    trans_weight: bool = _spec("transWeight", "bool", True)
    rank: int = _spec("rank", "int", 0)
    rank_size: int = _spec("rankSize", "int", 0)
    rank_root: int = _spec("rankRoot", "int", 0)
    has_residual: bool = _spec("hasResidual", "bool", False)
    backend: str = _spec("backend", "str", "hccl")
    hccl_comm: int | None = _spec("hcclComm", "comm", None)
    comm_mode: CommMode = _spec("commMode", CommMode, _MP)
    rank_table_file: str = _spec("rankTableFile", "str", "")
    type: ParallelType = _spec("type", ParallelType, ParallelType.LINEAR_ALL_REDUCE)
    keep_intermediate: bool = _spec("keepIntermediate", "bool", False)
    quant_type: LinearParallelQuantType = _spec(
        "quantType", LinearParallelQuantType, LinearParallelQuantType.QUANT_TYPE_UNQUANT
    )
    quant_group_size: int = _spec("quantGroupSize", "int", 0)
    out_data_type: AclDataType = _spec("outDataType", AclDataType, AclDataType.ACL_DT_UNDEFINED)
    comm_domain: str = _spec("commDomain", "str", "")
    two_dim_TP_info: TwoDimTPInfo = _spec("twoDimTPInfo", TwoDimTPInfo, factory=TwoDimTPInfo)  # noqa: N815
    moe_info: MoeInfo = _spec("moeInfo", MoeInfo, factory=lambda: MoeInfo(1, 1, 1))

    def io_numbers(self) -> tuple[int, int]:
        """ATB's GetInputNum / GetOutputNum: x, weight, [bias, deqScale], [residual], [perTokenScale],
        [globalTokensPerExpertMatrix, maxOutputSize]; the output, and the gathered x with keep_intermediate."""
        moe = self.type in (ParallelType.ALLTOALLVC_ALL_GATHER_GMM, ParallelType.GMM_REDUCE_SCATTER_ALLTOALLVC)
        quant = (
            self.backend not in ("hccl", "lccl")
            and self.type != ParallelType.ALL_GATHER_LINEAR_REDUCE_SCATTER
            and LinearParallelQuantType.QUANT_TYPE_PER_TENSOR
            <= self.quant_type
            < LinearParallelQuantType.QUANT_TYPE_MAX
        )
        inputs = (3 if self.has_residual else 2) + (2 if moe else 0)
        if quant:
            inputs += 1 if moe else 2
            inputs += 1 if self.quant_type == LinearParallelQuantType.QUANT_TYPE_PER_TOKEN else 0
        return inputs, (2 if self.keep_intermediate else 1)


PARAM_TYPES: tuple[type[CommParam], ...] = (
    AllGatherParam,
    AllReduceParam,
    BroadcastParam,
    ReduceScatterParam,
    ReduceScatterVParam,
    AllToAllParam,
    LinearParallelParam,
)
