"""Builds atb_ops: its native libraries and Python extension modules (torch.utils.cpp_extension, ninja).

What is built (all under the package folder, so a wheel and an in-place build look the same):

  atb_ops/lib/libatb_ops.so        csrc/: core, communicators (shm, gloo, nccl and hccl logic), ATB operators,
                                   quantisation kernels. No Python in it.
  atb_ops/lib/libatb_ops_torch.so  op_plugin/ TorchScript and dispatcher registrations: the class
                                   torch.classes.OperationTorch.OperationTorch and the torch.ops.atb_ops ops.
  atb_ops/_C.*.so                  op_plugin/module.cpp: the Python module of the package.
  atb_ops/_testing.*.so            tests/native/: recording mocks of HcclApi / NcclApi for the tests; never
                                   imported by atb_ops (ATB_OPS_TESTING=0 leaves it out, as wheels do).

Optional parts, each announced on stderr: the NCCL backend (csrc/comm/nccl/cuda) and the CUDA quantisation
kernels when torch has CUDA and nccl.h / nvcc are found; the HCCL backend for NPUs (csrc/comm/hccl/npu) with
the Ascend toolkit and torch_npu. See README "Install".
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
VERSION = (ROOT / "python" / "atb_ops" / "VERSION").read_text().strip()

# Extension name -> file name of the plain shared libraries (no Python module suffix, a SONAME of their own).
SHARED_LIBRARIES = {
    "atb_ops.lib.libatb_ops": "libatb_ops.so",
    "atb_ops.lib.libatb_ops_torch": "libatb_ops_torch.so",
    "atb_ops.lib.libatb_ops_hccl_cpu": "libatb_ops_hccl_cpu.so",
    "atb_ops.atb_home.lib.libatb": "libatb.so",
    "atb_ops.atb_home.lib.libatb_test_framework": "libatb_test_framework.so",
}


def say(message: str) -> None:
    print(f"[setup] {message}", file=sys.stderr)


def sources(*patterns: str) -> list[str]:
    return sorted(os.path.relpath(p, ROOT) for pattern in patterns for p in glob.glob(str(ROOT / pattern)))


def nlohmann_include() -> str:
    """Header-only JSON library from the nlohmann-json wheel."""
    import nlohmann_json

    return str(Path(nlohmann_json.__file__).resolve().parent / "include")


def hccl_headers() -> str | None:
    """The folder holding HCCL's public headers (third_party/hccl/inc/hccl/hccl.h, acl/acl.h): the include
    folder of the torch_npu wheel, which scripts/fetch_hccl_headers.sh downloads and unpacks (never installs)
    into third_party/. ATB_OPS_HCCL_INCLUDE names another; "0" builds without HCCL's API on CPU."""
    explicit = os.environ.get("ATB_OPS_HCCL_INCLUDE")
    candidates = [explicit] if explicit else sorted(glob.glob(str(ROOT / "third_party/torch_npu-*/torch_npu/include")))
    for folder in candidates:
        if folder != "0" and (Path(folder) / "third_party/hccl/inc/hccl/hccl.h").is_file():
            return folder
    return None


def cuda_kernels() -> list[str]:
    """The .cu kernels, when this torch has CUDA and a CUDA toolkit is installed (ATB_OPS_CUDA=0: never)."""
    if os.environ.get("ATB_OPS_CUDA", "1") == "0":
        return []
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    if torch.version.cuda is None or CUDA_HOME is None:
        return []
    return sources("csrc/quant/*.cu")


def nccl_rpaths(libdir: Path) -> list[str]:
    """Where libatb_ops.so finds libnccl at run time. NCCL from a wheel (nvidia-nccl-cuXX in site-packages) is
    found relative to the installed package, never in pip's throwaway build environment; a system NCCL by
    its absolute folder."""
    parts = libdir.parts
    if "site-packages" not in parts:
        return [f"-Wl,-rpath,{libdir}"]
    inside = Path(*parts[parts.index("site-packages") + 1 :])
    rpaths = [f"-Wl,-rpath,$ORIGIN/../../{inside}"]  # from site-packages/atb_ops/lib/
    if "pip-build-env" not in str(libdir):
        rpaths.append(f"-Wl,-rpath,{libdir}")  # an in-place build uses the environment's own NCCL
    return rpaths


def nccl_build() -> dict:
    """The CUDA part of the NCCL backend (csrc/comm/nccl/cuda/), when torch has CUDA, the CUDA toolkit is found
    and nccl.h + libnccl are found ($NCCL_HOME, torch's nvidia-nccl wheel, /usr). ATB_OPS_NCCL=0 leaves it out.
    The logic in csrc/comm/nccl/ is always built (mock-tested). Returns sources, include_dirs, library_dirs,
    extra_link_args, and "cuda": whether anything needs the CUDA toolchain.
    """
    build = {"cuda": False, "sources": [], "include_dirs": [], "library_dirs": [], "extra_link_args": []}
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    if os.environ.get("ATB_OPS_NCCL", "1") == "0":
        say("NCCL backend: left out (ATB_OPS_NCCL=0); mock-tested logic only")
        return build
    if not torch.version.cuda:
        say("NCCL backend: not built: this torch has no CUDA; mock-tested logic only")
        return build
    if CUDA_HOME is None:
        say("NCCL backend: not built: torch has CUDA but no CUDA toolkit was found (set CUDA_HOME)")
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
                    build["sources"] = sources("csrc/comm/nccl/cuda/*.cpp")
                    build["include_dirs"].append(str(header.parent))
                    build["library_dirs"].append(str(libdir))
                    # The wheel ships only the versioned name, which -lnccl would not find.
                    build["extra_link_args"] += [f"-l:{name}", *nccl_rpaths(libdir)]
                    say(f"NCCL backend: built against {header} and {libdir / name}")
                    return build
    say(f"NCCL backend: not built: torch has CUDA {torch.version.cuda} but no nccl.h + libnccl in {roots}")
    return build


def hccl_npu_build() -> dict:
    """The NPU part of the HCCL backend (csrc/comm/hccl/npu/), when the Ascend toolkit is found
    (ASCEND_TOOLKIT_HOME or ASCEND_HOME_PATH) and torch_npu imports (probed in a child process: importing it
    where it cannot load would break this one's torch). Links libhccl and libascendcl from the toolkit and
    libtorch_npu from torch_npu. The backend logic (csrc/comm/hccl/) is always built.
    """
    build: dict = {"sources": [], "include_dirs": [], "library_dirs": [], "libraries": [], "extra_link_args": []}
    ascend = os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME_PATH")
    if not ascend:
        return build
    spec = importlib.util.find_spec("torch_npu")
    if spec is None or spec.origin is None:
        say(f"HCCL backend: Ascend toolkit at {ascend} but no torch_npu installed: not built")
        return build
    probe = subprocess.run([sys.executable, "-c", "import torch, torch_npu"], check=False, capture_output=True,
                           text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        say(f"HCCL backend: torch_npu does not import ({last}): not built")
        return build
    npu = Path(spec.origin).resolve().parent
    lib_dirs = [str(Path(ascend) / "lib64"), str(npu / "lib")]
    build["sources"] = sources("csrc/comm/hccl/npu/*.cpp")
    # torch_npu's own copies of hccl.h and acl first: the declarations torch_npu itself was built with.
    build["include_dirs"] = [str(npu / "include"), str(Path(ascend) / "include")]
    build["library_dirs"] = lib_dirs
    build["libraries"] = ["hccl", "ascendcl", "torch_npu"]
    build["extra_link_args"] = [f"-Wl,-rpath,{d}" for d in lib_dirs]
    say(f"HCCL backend: built for NPUs against {ascend} and {npu}")
    return build


COMMON_FLAGS = ["-O2", "-std=c++17", "-ffp-contract=off"]  # no FMA: the quant kernels round as documented


def native_library(name: str, srcs: list[str], *, python: bool, cuda: bool = False, **extra):
    """A plain shared library (see SHARED_LIBRARIES): default symbol visibility, SONAME = its file name,
    found at run time next to its users through $ORIGIN."""
    kwargs = {
        "name": name,
        "sources": srcs,
        "include_dirs": [str(ROOT / "csrc"), str(ROOT), nlohmann_include(), *extra.pop("include_dirs", [])],
        "library_dirs": list(extra.pop("library_dirs", [])),
        "libraries": list(extra.pop("libraries", [])),
        "extra_link_args": [f"-Wl,-soname,{SHARED_LIBRARIES[name]}", "-Wl,-rpath,$ORIGIN",
                            *extra.pop("extra_link_args", [])],
        "extra_compile_args": {"cxx": list(COMMON_FLAGS)},
        **extra,
    }
    if cuda:
        kwargs["extra_compile_args"]["nvcc"] = ["-O2", "-std=c++17", "--fmad=false"]
    ext = (CUDAExtension if cuda else CppExtension)(**kwargs)
    if not python:
        ext.libraries = [lib for lib in ext.libraries if lib != "torch_python"]
    ext.atb_needs = []  # names of SHARED_LIBRARIES this one links
    return ext


def python_module(name: str, srcs: list[str], needs: list[str], rpath: str):
    ext = CppExtension(
        name=name,
        sources=srcs,
        include_dirs=[str(ROOT / "csrc"), str(ROOT), nlohmann_include()],
        extra_compile_args={"cxx": [*COMMON_FLAGS, "-fvisibility=hidden"]},
        extra_link_args=[f"-Wl,-rpath,{rpath}"],
    )
    ext.atb_needs = needs
    return ext


def extensions() -> list:
    nccl = nccl_build()
    hccl = hccl_npu_build()
    kernels = cuda_kernels()
    core = native_library(
        "atb_ops.lib.libatb_ops",
        sources("csrc/core/*.cpp", "csrc/comm/*.cpp", "csrc/comm/bootstrap/*.cpp", "csrc/comm/shm/*.cpp",
                "csrc/comm/c10d/*.cpp", "csrc/comm/nccl/*.cpp", "csrc/comm/hccl/*.cpp", "csrc/ops/*.cpp",
                "csrc/quant/*.cpp") + nccl["sources"] + hccl["sources"] + kernels,
        python=False,
        cuda=bool(kernels) or nccl["cuda"],
        include_dirs=nccl["include_dirs"] + hccl["include_dirs"],
        library_dirs=nccl["library_dirs"] + hccl["library_dirs"],
        libraries=hccl["libraries"],
        extra_link_args=nccl["extra_link_args"] + hccl["extra_link_args"],
        define_macros=[("ATB_OPS_QUANT_CUDA", "1")] if kernels else [],
    )
    torch_bindings = native_library("atb_ops.lib.libatb_ops_torch", sources("op_plugin/torch/*.cpp"), python=True,
                                    define_macros=[("ATB_OPS_QUANT_CUDA", "1")] if kernels else [])
    torch_bindings.atb_needs = ["atb_ops.lib.libatb_ops"]
    exts = [
        core,
        torch_bindings,
        python_module("atb_ops._C", sources("op_plugin/python/*.cpp"),
                      ["atb_ops.lib.libatb_ops", "atb_ops.lib.libatb_ops_torch"], "$ORIGIN/lib"),
    ]
    headers = hccl_headers()
    if headers:
        say(f"HCCL's C API on CPU (libatb_ops_hccl_cpu.so, the emulation's libatb.so): built against {headers}")
        hccl_cpu = native_library("atb_ops.lib.libatb_ops_hccl_cpu", sources("csrc/hccl_cpu/*.cpp"), python=False,
                                  include_dirs=[headers])
        hccl_cpu.atb_needs = ["atb_ops.lib.libatb_ops"]
        runner = native_library("atb_ops.atb_home.lib.libatb", sources("csrc/comm/hccl/cpu/*.cpp"), python=False,
                                include_dirs=[headers], extra_link_args=["-Wl,-rpath,$ORIGIN/../../lib"])
        runner.atb_needs = ["atb_ops.lib.libatb_ops", "atb_ops.lib.libatb_ops_hccl_cpu"]
        # No code of its own: it exists to pull in the binding and the runner (kept by --no-as-needed).
        framework = native_library("atb_ops.atb_home.lib.libatb_test_framework",
                                   sources("op_plugin/atb_home/*.cpp"), python=False,
                                   extra_link_args=["-Wl,-rpath,$ORIGIN/../../lib", "-Wl,--no-as-needed"])
        framework.atb_needs = ["atb_ops.lib.libatb_ops_torch", "atb_ops.atb_home.lib.libatb"]
        exts += [hccl_cpu, runner, framework]
    else:
        say("HCCL's C API on CPU: not built (no HCCL headers: run scripts/fetch_hccl_headers.sh or set "
            "ATB_OPS_HCCL_INCLUDE); `python -m atb_ops run` then runs backend 'hccl' on shm")
    if os.environ.get("ATB_OPS_TESTING", "1") != "0":
        exts.append(python_module("atb_ops._testing", sources("tests/native/*.cpp"), ["atb_ops.lib.libatb_ops"],
                                  "$ORIGIN/lib"))
    return exts


TORCH_RECORD = "TORCH_BUILT_WITH"  # python/atb_ops/_torch_check.py reads it at import


class NativeBuild(BuildExtension):
    """BuildExtension that names the plain shared libraries as such and links each extension against the
    libraries it needs (built first: extensions are built in list order), and records the torch it was
    built against next to them (the package refuses to load under another one, with a clear message)."""

    def run(self) -> None:
        super().run()
        import torch

        build_py = self.get_finalized_command("build_py")
        folders = {Path(self.build_lib) / "atb_ops"}
        if self.inplace:
            folders.add(Path(build_py.get_package_dir("atb_ops")))
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / TORCH_RECORD).write_text(f"{torch.__version__}\n")

    def get_ext_filename(self, fullname: str) -> str:
        # Called with the dotted name (setuptools) and with its last part alone (distutils' get_ext_fullpath).
        for name, file in SHARED_LIBRARIES.items():
            if fullname == name:
                return os.path.join(*name.split(".")[:-1], file)
            if fullname == name.rsplit(".", 1)[1]:
                return file
        return super().get_ext_filename(fullname)

    def copy_extensions_to_source(self) -> None:
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace, _ = self._get_inplace_equivalent(build_py, ext)
            os.makedirs(os.path.dirname(inplace), exist_ok=True)
        super().copy_extensions_to_source()

    def build_extension(self, ext) -> None:
        for needed in getattr(ext, "atb_needs", []):
            path = Path(self.get_ext_fullpath(needed))
            if str(path.parent) not in ext.library_dirs:
                ext.library_dirs.append(str(path.parent))
            ext.extra_link_args.append(f"-l:{path.name}")
        super().build_extension(ext)


setup(
    name="atb_ops",
    version=VERSION,
    description="ATB-compatible communication operators for Ascend (HCCL), CUDA (NCCL) and CPU ranks",
    package_dir={"": "python"},
    packages=find_packages("python"),
    package_data={"atb_ops": ["VERSION", TORCH_RECORD]},
    ext_modules=extensions(),
    cmdclass={"build_ext": NativeBuild.with_options(use_ninja=True)},
    python_requires=">=3.10",
    # The torch range the sources support (tested: 2.13 here; 2.11 is the GPU machines' and unverified
    # until a session has one). The build must use the torch that will run it: see README "Install".
    install_requires=["torch>=2.11,<2.14", "numpy"],
)
