"""Builds atb_ops and its native core atb_ops._C (torch.utils.cpp_extension, ninja).

The CPU core (csrc/core, csrc/ops, csrc/comm/{shm,c10d}, op_plugin) is always built. Vendor backends
(csrc/comm/nccl, csrc/comm/hccl) add their sources through backend_sources() when their toolchain is
found; see README "Build".
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = Path(__file__).resolve().parent


def nlohmann_include() -> str:
    """Header-only JSON library from the nlohmann-json wheel."""
    import nlohmann_json

    return str(Path(nlohmann_json.__file__).resolve().parent / "include")


def cpu_sources() -> list[str]:
    patterns = ["csrc/core/*.cpp", "csrc/ops/*.cpp", "csrc/comm/*.cpp", "csrc/comm/shm/*.cpp",
                "csrc/comm/c10d/*.cpp", "op_plugin/*.cpp"]
    return sorted(str(p) for pattern in patterns for p in glob.glob(str(ROOT / pattern)))


def hccl_build_config() -> dict[str, list[str]]:
    """Sources and flags of the HCCL backend (csrc/comm/hccl, docs/hccl.md).

    The backend logic and its recording mock (csrc/comm/hccl/*.cpp) need no Ascend header and are always
    built, so CPU CI tests them. The real HcclApi and the "hccl" registration (csrc/comm/hccl/npu/*.cpp) are
    added only when the Ascend toolkit is found (ASCEND_TOOLKIT_HOME or ASCEND_HOME_PATH) and torch_npu
    imports; they link libhccl and libascendcl from the toolkit and libtorch_npu from torch_npu. torch_npu
    is probed in a child process: importing it where it cannot load would break this one's torch.
    """
    config: dict[str, list[str]] = {
        "sources": sorted(glob.glob(str(ROOT / "csrc/comm/hccl/*.cpp"))),
        "include_dirs": [],
        "library_dirs": [],
        "libraries": [],
        "extra_link_args": [],
    }
    ascend = os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME_PATH")
    if not ascend:
        return config
    spec = importlib.util.find_spec("torch_npu")
    if spec is None or spec.origin is None:
        print(f"[atb_ops] Ascend toolkit at {ascend} but no torch_npu installed: building without backend 'hccl'")
        return config
    probe = subprocess.run(
        [sys.executable, "-c", "import torch, torch_npu"], check=False, capture_output=True, text=True
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"[atb_ops] torch_npu does not import ({last}): building without backend 'hccl'")
        return config
    npu = Path(spec.origin).resolve().parent
    lib_dirs = [str(Path(ascend) / "lib64"), str(npu / "lib")]
    config["sources"] += sorted(glob.glob(str(ROOT / "csrc/comm/hccl/npu/*.cpp")))
    # torch_npu's own copies of hccl.h and acl first: the declarations torch_npu itself was built with.
    config["include_dirs"] += [str(npu / "include"), str(Path(ascend) / "include")]
    config["library_dirs"] += lib_dirs
    config["libraries"] += ["hccl", "ascendcl", "torch_npu"]
    config["extra_link_args"] += [f"-Wl,-rpath,{d}" for d in lib_dirs]
    print(f"[atb_ops] building backend 'hccl' against {ascend} and {npu}")
    return config


def relative(paths: list[str]) -> list[str]:
    return [os.path.relpath(p, ROOT) for p in paths]


def extension():
    flags = ["-O2", "-std=c++17", "-fvisibility=hidden"]
    hccl = hccl_build_config()
    return CppExtension(
        name="atb_ops._C",
        sources=relative(cpu_sources() + hccl["sources"]),
        include_dirs=[str(ROOT / "csrc"), nlohmann_include()] + hccl["include_dirs"],
        library_dirs=hccl["library_dirs"],
        libraries=hccl["libraries"],
        extra_compile_args={"cxx": flags},
        extra_link_args=hccl["extra_link_args"],
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
