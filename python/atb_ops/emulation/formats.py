"""``torch_npu.npu_format_cast`` of the emulation: plain layouts only.

An NPU tensor carries an ACL storage format. The plain ones (ND, NCHW, NHWC, NCDHW) store elements in
the order torch does, so a cast between them is the identity here; the blocked ones (FRACTAL_NZ,
NC1HWC0, ...) reorder the data for the Cube unit and have no meaning on a CPU or GPU, so a cast to one
raises instead of pretending.
"""

from __future__ import annotations

import torch

# aclFormat values (CANN's acl_base.h).
ACL_FORMATS = {
    -1: "ACL_FORMAT_UNDEFINED",
    0: "ACL_FORMAT_NCHW",
    1: "ACL_FORMAT_NHWC",
    2: "ACL_FORMAT_ND",
    3: "ACL_FORMAT_NC1HWC0",
    4: "ACL_FORMAT_FRACTAL_Z",
    12: "ACL_FORMAT_NC1HWC0_C04",
    16: "ACL_FORMAT_HWCN",
    27: "ACL_FORMAT_NDHWC",
    29: "ACL_FORMAT_FRACTAL_NZ",
    30: "ACL_FORMAT_NCDHW",
    32: "ACL_FORMAT_NDC1HWC0",
    33: "ACL_FRACTAL_Z_3D",
}
ACL_FORMAT_ND = 2
PLAIN_FORMATS = frozenset({0, 1, 2, 30})  # NCHW, NHWC, ND, NCDHW: torch's own element order


def npu_format_cast(tensor: torch.Tensor, acl_format: int) -> torch.Tensor:
    """The tensor in ACL storage format `acl_format`: itself for a plain format.

    Args:
        tensor: Any tensor.
        acl_format: An aclFormat value (int or enum), e.g. 2 (ACL_FORMAT_ND).

    Returns:
        `tensor` itself, for ND, NCHW, NHWC and NCDHW.

    Raises:
        TypeError: When `tensor` is not a tensor or `acl_format` not an integer.
        NotImplementedError: For a blocked NPU format such as ACL_FORMAT_FRACTAL_NZ (29).
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"npu_format_cast: expected a Tensor, got {type(tensor).__name__}")
    try:
        fmt = int(acl_format)
    except (TypeError, ValueError):
        raise TypeError(f"npu_format_cast: acl_format must be an aclFormat integer, got {acl_format!r}") from None
    if fmt in PLAIN_FORMATS:
        return tensor
    name = ACL_FORMATS.get(fmt, "an unknown aclFormat")
    raise NotImplementedError(
        f"npu_format_cast: {name} ({fmt}) is an NPU-internal blocked layout that the atb_ops emulation does "
        f"not provide; only plain layouts work here: ACL_FORMAT_ND (2), NCHW (0), NHWC (1), NCDHW (30)"
    )


def get_npu_format(tensor: torch.Tensor) -> int:
    """The ACL storage format of a tensor here: always ACL_FORMAT_ND (2).

    Args:
        tensor: Any tensor.

    Returns:
        2.
    """
    return ACL_FORMAT_ND
