"""Builds atb_ops and its native core atb_ops._C (torch.utils.cpp_extension, ninja).

The CPU core (csrc/core, csrc/ops, csrc/comm/{shm,c10d}, csrc/quant, op_plugin) is always built. Vendor
backends (csrc/comm/nccl, csrc/comm/hccl) add their sources through backend_sources() when their toolchain
is found; see README "Build". The CUDA quantisation kernels (csrc/quant/*.cu) are compiled only when torch
has CUDA and nvcc is found (ATB_OPS_NO_CUDA=1 skips them).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

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


def nccl_build() -> dict:
    """The NCCL backend (csrc/comm/nccl/), as additions to the extension's arguments.

    Its logic (nccl_comm, nccl_bootstrap, the NcclApi mock) needs neither CUDA nor nccl.h and is always
    built, so tests/test_nccl_mock.py runs everywhere. csrc/comm/nccl/cuda/ (the real NcclApi and the
    "nccl" communicator) is added only when torch has CUDA (torch.version.cuda), the CUDA toolkit is found
    (CUDA_HOME) and nccl.h is found: in $NCCL_HOME, torch's own nvidia-nccl wheel, or /usr. ATB_OPS_NCCL=0
    leaves it out. Returns {"cuda": bool, "sources", "include_dirs", "library_dirs", "extra_link_args"}.
    """
    build = {
        "cuda": False,
        "sources": sorted(glob.glob(str(ROOT / "csrc/comm/nccl/*.cpp"))),
        "include_dirs": [],
        "library_dirs": [],
        "extra_link_args": [],
    }

    def say(message: str) -> None:
        print(f"[setup] NCCL backend: {message}", file=sys.stderr)

    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    if os.environ.get("ATB_OPS_NCCL", "1") == "0":
        say("left out (ATB_OPS_NCCL=0); mock-tested logic only")
        return build
    if not torch.version.cuda:
        say("not built: this torch has no CUDA; mock-tested logic only")
        return build
    if CUDA_HOME is None:
        say("not built: torch has CUDA but no CUDA toolkit was found (set CUDA_HOME)")
        return build

    roots = [os.environ["NCCL_HOME"]] if os.environ.get("NCCL_HOME") else []
    try:
        import nvidia.nccl  # torch's CUDA wheels depend on nvidia-nccl-cuXX

        roots += [str(Path(p)) for p in nvidia.nccl.__path__]
    except ImportError:
        pass
    roots += ["/usr", "/usr/local"]
    for root in roots:
        header = Path(root) / "include" / "nccl.h"
        if not header.is_file():
            continue
        for libdir in [Path(root) / "lib", Path(root) / "lib64", Path(root) / "lib" / "x86_64-linux-gnu"]:
            for name in ("libnccl.so", "libnccl.so.2"):
                if (libdir / name).exists():
                    build.update(cuda=True)
                    build["sources"] += sorted(glob.glob(str(ROOT / "csrc/comm/nccl/cuda/*.cpp")))
                    build["include_dirs"].append(str(header.parent))
                    build["library_dirs"].append(str(libdir))
                    # The wheel ships only the versioned name, which -lnccl would not find.
                    build["extra_link_args"] += [f"-l:{name}", f"-Wl,-rpath,{libdir}"]
                    say(f"built against {header} and {libdir / name}")
                    return build
    say(f"not built: torch has CUDA {torch.version.cuda} but no nccl.h + libnccl was found in {roots}")
    return build


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
    # -ffp-contract=off: no fused multiply-add, so the quantisation kernels round exactly as documented.
    flags = ["-O2", "-std=c++17", "-fvisibility=hidden", "-ffp-contract=off"]
    nccl = nccl_build()
    hccl = hccl_build_config()
    cuda = cuda_sources()
    kwargs = {
        "name": "atb_ops._C",
        "sources": relative(cpu_sources() + nccl["sources"] + hccl["sources"] + cuda),
        "include_dirs": [str(ROOT / "csrc"), str(ROOT), nlohmann_include(), *nccl["include_dirs"],
                         *hccl["include_dirs"]],
        "library_dirs": nccl["library_dirs"] + hccl["library_dirs"],
        "libraries": hccl["libraries"],
        "extra_link_args": nccl["extra_link_args"] + hccl["extra_link_args"],
        "extra_compile_args": {"cxx": flags},
    }
    if cuda:
        kwargs["define_macros"] = [("ATB_OPS_QUANT_CUDA", "1")]
        kwargs["extra_compile_args"]["nvcc"] = ["-O2", "-std=c++17", "--fmad=false", "-DATB_OPS_QUANT_CUDA=1"]
    if cuda or nccl["cuda"]:
        return CUDAExtension(**kwargs)
    return CppExtension(**kwargs)


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
