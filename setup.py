"""Builds atb_ops and its native core atb_ops._C (torch.utils.cpp_extension, ninja).

The CPU core (csrc/core, csrc/ops, csrc/comm/{shm,c10d}, csrc/quant, op_plugin) is always built. Vendor
backends (csrc/comm/nccl, csrc/comm/hccl) add their sources through backend_sources() when their toolchain
is found; see README "Build". The CUDA quantisation kernels (csrc/quant/*.cu) are compiled only when torch
has CUDA and nvcc is found (ATB_OPS_NO_CUDA=1 skips them).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = Path(__file__).resolve().parent


def nlohmann_include() -> str:
    """Header-only JSON library from the nlohmann-json wheel."""
    import nlohmann_json

    return str(Path(nlohmann_json.__file__).resolve().parent / "include")


def cpu_sources() -> list[str]:
    patterns = [
        "csrc/core/*.cpp",
        "csrc/ops/*.cpp",
        "csrc/comm/*.cpp",
        "csrc/comm/shm/*.cpp",
        "csrc/comm/c10d/*.cpp",
        "csrc/quant/*.cpp",
        "op_plugin/*.cpp",
    ]
    return sorted(str(p) for pattern in patterns for p in glob.glob(str(ROOT / pattern)))


def cuda_sources() -> list[str]:
    """The .cu kernels, when this torch has CUDA and a CUDA toolkit is installed."""
    if os.environ.get("ATB_OPS_NO_CUDA") == "1":
        return []
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    if torch.version.cuda is None or CUDA_HOME is None:
        return []
    return sorted(glob.glob(str(ROOT / "csrc/quant/*.cu")))


def relative(paths: list[str]) -> list[str]:
    return [os.path.relpath(p, ROOT) for p in paths]


def extension():
    # -ffp-contract=off: no fused multiply-add, so the quantisation kernels round exactly as documented.
    flags = ["-O2", "-std=c++17", "-fvisibility=hidden", "-ffp-contract=off"]
    cuda = cuda_sources()
    if not cuda:
        return CppExtension(
            name="atb_ops._C",
            sources=relative(cpu_sources()),
            include_dirs=[str(ROOT / "csrc"), str(ROOT), nlohmann_include()],
            extra_compile_args={"cxx": flags},
        )
    from torch.utils.cpp_extension import CUDAExtension

    return CUDAExtension(
        name="atb_ops._C",
        sources=relative(cpu_sources() + cuda),
        include_dirs=[str(ROOT / "csrc"), str(ROOT), nlohmann_include()],
        define_macros=[("ATB_OPS_QUANT_CUDA", "1")],
        extra_compile_args={
            "cxx": flags,
            "nvcc": ["-O2", "-std=c++17", "--fmad=false", "-DATB_OPS_QUANT_CUDA=1"],
        },
    )


setup(
    name="atb_ops",
    version="0.1.0",
    description="ATB-compatible alltoallv and collectives for Ascend (HCCL), CUDA (NCCL) and CPU ranks",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.10",
)
