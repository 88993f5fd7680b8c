"""Builds atb_ops and its native core atb_ops._C (torch.utils.cpp_extension, ninja).

The CPU core (csrc/core, csrc/ops, csrc/comm/{shm,c10d}, op_plugin) is always built. Vendor backends
(csrc/comm/nccl, csrc/comm/hccl) add their sources through backend_sources() when their toolchain is
found; see README "Build".
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
        "op_plugin/*.cpp",
    ]
    return sorted(str(p) for pattern in patterns for p in glob.glob(str(ROOT / pattern)))


def relative(paths: list[str]) -> list[str]:
    return [os.path.relpath(p, ROOT) for p in paths]


def extension():
    flags = ["-O2", "-std=c++17", "-fvisibility=hidden"]
    return CppExtension(
        name="atb_ops._C",
        sources=relative(cpu_sources()),
        include_dirs=[str(ROOT / "csrc"), str(ROOT), nlohmann_include()],
        extra_compile_args={"cxx": flags},
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
