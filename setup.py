"""Builds atb_ops: its native libraries and Python extension modules (torch.utils.cpp_extension, ninja).

What is built (all under the package folder, so a wheel and an in-place build look the same), on every install
(pip install ., pip wheel, editable, in place), with nothing fetched:

  atb_ops/lib/libatb_ops.so        csrc/: core, communicators (shm, gloo, nccl and hccl logic), ATB operators,
                                   quantisation kernels. No Python in it.
  atb_ops/lib/libatb_ops_torch.so  op_plugin/ TorchScript and dispatcher registrations: the class
                                   torch.classes.OperationTorch.OperationTorch and the torch.ops.atb_ops ops.
  atb_ops/_C.*.so                  op_plugin/python/: the Python module of the package.
  atb_ops/ascend_home/             a CANN-like folder ($ASCEND_HOME_PATH under `python -m atb_ops env`):
      lib64/libhccl.so             csrc/emulated/hccl/: HCCL's C API on CPU ranks
      lib64/libascendcl.so         csrc/emulated/acl/: the ACL runtime subset on CPU (no torch in it)
      include/{acl,hccl}/          include/{acl,hccl} (links in the source tree, files in a wheel)
  atb_ops/atb_home/                ATB's layout ($ATB_HOME_PATH): lib/libatb.so (csrc/emulated/atb/: ATB's C++
                                   API, and in hccl_backend/ the HCCL backend over libhccl.so),
                                   lib/libatb_test_framework.so (op_plugin/atb_home/), include/atb/
  atb_ops/_testing.*.so            tests/native/: recording mocks of HcclApi / NcclApi for the tests; never
                                   imported by atb_ops; built only on request (ATB_OPS_TESTING=1, which
                                   scripts/setup.sh sets for the test suite).

Optional parts: the NCCL backend (csrc/comm/nccl/cuda/) and the CUDA quantisation kernels when torch has CUDA and
nccl.h / nvcc are found; the HCCL backend for NPUs (csrc/comm/hccl/npu/) with the Ascend toolkit and torch_npu.
What was built, and why an optional part was not, is announced on stderr and recorded in atb_ops/BUILT_PARTS.json
(`python -m atb_ops doctor` shows it). See README "Install".
"""

from __future__ import annotations

import glob
import hashlib
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path


def require(module: str, package: str) -> None:
    """Stops the build with one line naming the package to install when a build requirement is missing (pip's
    isolated build installs them from pyproject.toml; --no-build-isolation uses the environment's)."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        # The package can be there with one of its own requirements missing (nlohmann_json imports
        # importlib_resources): name what is really missing, or the user reinstalls the wrong thing.
        missing = package if e.name in (None, module) else f"{e.name} (needed by {package})"
        sys.exit(f"atb_ops build: the Python package '{missing}' is required to build (pip install "
                 f"{package if missing == package else e.name}); the build requirements are listed in pyproject.toml "
                 "[build-system] and README 'Install'")


for _module, _package in (("setuptools", "setuptools"), ("torch", "torch==2.13.0"),
                          ("nlohmann_json", "nlohmann-json==3.12.0"), ("ninja", "ninja")):
    require(_module, _package)

from setuptools import find_packages, setup  # noqa: E402  (after the requirement check)
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension  # noqa: E402

ROOT = Path(__file__).resolve().parent
VERSION = (ROOT / "python" / "atb_ops" / "VERSION").read_text().strip()

# Extension name -> file name of the plain shared libraries (no Python module suffix, a SONAME of their own).
SHARED_LIBRARIES = {
    "atb_ops.lib.libatb_ops": "libatb_ops.so",
    "atb_ops.lib.libatb_ops_torch": "libatb_ops_torch.so",
    "atb_ops.ascend_home.lib64.libhccl": "libhccl.so",
    "atb_ops.ascend_home.lib64.libascendcl": "libascendcl.so",
    "atb_ops.atb_home.lib.libatb": "libatb.so",
    "atb_ops.atb_home.lib.libatb_test_framework": "libatb_test_framework.so",
}


def say(message: str) -> None:
    print(f"[setup] {message}", file=sys.stderr)


# What this build makes, part by part: {part: {"built": bool, "files": [...], "why": str}}. Written next to the
# package as BUILT_PARTS.json; `python -m atb_ops doctor` reads it.
PARTS: dict[str, dict] = {}
PARTS_RECORD = "BUILT_PARTS.json"


def note(part: str, built: bool, why: str, files: tuple[str, ...] = ()) -> None:
    """Records (and announces on stderr) whether an optional or always-built part is built, and why."""
    PARTS[part] = {"built": built, "files": list(files), "why": why}
    say(f"{part}: {'built' if built else 'not built'}: {why}")


def sources(*patterns: str) -> list[str]:
    return sorted(os.path.relpath(p, ROOT) for pattern in patterns for p in glob.glob(str(ROOT / pattern)))


def nlohmann_include() -> str:
    """Header-only JSON library from the nlohmann-json wheel."""
    import nlohmann_json

    return str(Path(nlohmann_json.__file__).resolve().parent / "include")


def cuda_kernels() -> list[str]:
    """The .cu kernels, when this torch has CUDA and a CUDA toolkit is installed (ATB_OPS_CUDA=0: never)."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME

    part = "CUDA quantisation kernels"
    if os.environ.get("ATB_OPS_CUDA", "1") == "0":
        note(part, False, "left out (ATB_OPS_CUDA=0)")
        return []
    if torch.version.cuda is None:
        note(part, False, f"this torch ({torch.__version__}) has no CUDA")
        return []
    if CUDA_HOME is None:
        note(part, False, "torch has CUDA but no CUDA toolkit was found (set CUDA_HOME)")
        return []
    note(part, True, f"CUDA {torch.version.cuda}, toolkit at {CUDA_HOME}", ("lib/libatb_ops.so",))
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
        note("NCCL backend", False, "left out (ATB_OPS_NCCL=0); mock-tested logic only")
        return build
    if not torch.version.cuda:
        note("NCCL backend", False, f"this torch ({torch.__version__}) has no CUDA; mock-tested logic only")
        return build
    if CUDA_HOME is None:
        note("NCCL backend", False, "torch has CUDA but no CUDA toolkit was found (set CUDA_HOME)")
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
                    note("NCCL backend", True, f"against {header} and {libdir / name}", ("lib/libatb_ops.so",))
                    return build
    note("NCCL backend", False, f"torch has CUDA {torch.version.cuda} but no nccl.h + libnccl in {roots}")
    return build


def hccl_npu_build() -> dict:
    """The NPU part of the HCCL backend (csrc/comm/hccl/npu/), when the Ascend toolkit is found
    (ASCEND_TOOLKIT_HOME or ASCEND_HOME_PATH) and torch_npu imports (probed in a child process: importing it
    where it cannot load would break this one's torch). Links libhccl and libascendcl from the toolkit and
    libtorch_npu from torch_npu. The backend logic (csrc/comm/hccl/) is always built.
    """
    build: dict = {"sources": [], "include_dirs": [], "library_dirs": [], "libraries": [], "extra_link_args": []}
    ascend = os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME_PATH")
    if ascend and (Path(ascend) / "ATB_OPS_EMULATION").is_file():
        ascend = None  # atb_ops' own CPU layout (set by `python -m atb_ops env`), not a toolkit
    if not ascend:
        note("HCCL backend for NPUs", False, "no Ascend toolkit (ASCEND_TOOLKIT_HOME / ASCEND_HOME_PATH unset); "
             "HCCL's C API on CPU is built instead")
        return build
    spec = importlib.util.find_spec("torch_npu")
    if spec is None or spec.origin is None:
        note("HCCL backend for NPUs", False, f"Ascend toolkit at {ascend} but no torch_npu installed")
        return build
    probe = subprocess.run([sys.executable, "-c", "import torch, torch_npu"], check=False, capture_output=True,
                           text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        note("HCCL backend for NPUs", False, f"torch_npu does not import ({last})")
        return build
    npu = Path(spec.origin).resolve().parent
    lib_dirs = [str(Path(ascend) / "lib64"), str(npu / "lib")]
    build["sources"] = sources("csrc/comm/hccl/npu/*.cpp")
    # torch_npu's own copies of hccl.h and acl first: the declarations torch_npu itself was built with.
    build["include_dirs"] = [str(npu / "include"), str(Path(ascend) / "include")]
    build["library_dirs"] = lib_dirs
    build["libraries"] = ["hccl", "ascendcl", "torch_npu"]
    build["extra_link_args"] = [f"-Wl,-rpath,{d}" for d in lib_dirs]
    note("HCCL backend for NPUs", True, f"against {ascend} and {npu}", ("lib/libatb_ops.so",))
    return build


# No FMA: the quant kernels round as documented. -g0 overrides the -g of Python's CFLAGS: debug info of torch's
# headers made each object ~25x larger and the build ~1.6x slower (direct_collectives.cpp: 40 -> 24 s).
COMMON_FLAGS = ["-O2", "-g0", "-std=c++17", "-ffp-contract=off"]
TORCH_PRELUDE = "csrc/torch_prelude.h"  # see TorchPrelude
PYTHON_PRELUDE = "op_plugin/python/python_prelude.h"


def torch_rpaths(name: str) -> list[str]:
    """Where the plain library `name` finds torch's libraries (libc10, libtorch_cpu) when a program that is not
    Python loads it (a C program linked with -lhccl): torch beside atb_ops in site-packages, reached from the
    library's own folder; and, unless this is pip's throwaway build environment, the building torch's folder (an
    in-place or editable build)."""
    import torch

    up = "/".join([".."] * (len(name.split(".")) - 1))  # atb_ops/lib -> ../..; atb_ops/ascend_home/lib64 -> ../../..
    rpaths = [f"-Wl,-rpath,$ORIGIN/{up}/torch/lib"]
    torch_lib = Path(torch.__file__).resolve().parent / "lib"
    if "pip-build-env" not in str(torch_lib):
        rpaths.append(f"-Wl,-rpath,{torch_lib}")
    return rpaths


def native_library(name: str, srcs: list[str], *, python: bool, cuda: bool = False,
                   prelude: str | None = TORCH_PRELUDE, **extra):
    """A plain shared library (see SHARED_LIBRARIES): default symbol visibility, SONAME = its file name,
    found at run time next to its users through $ORIGIN, and torch's libraries through torch_rpaths. `prelude`:
    the header precompiled and forced first into its units (TorchPrelude), None where they hardly use torch."""
    kwargs = {
        "name": name,
        "sources": srcs,
        "include_dirs": [str(ROOT / "csrc"), str(ROOT), nlohmann_include(), *extra.pop("include_dirs", [])],
        "library_dirs": list(extra.pop("library_dirs", [])),
        "libraries": list(extra.pop("libraries", [])),
        "extra_link_args": [f"-Wl,-soname,{SHARED_LIBRARIES[name]}", "-Wl,-rpath,$ORIGIN", *torch_rpaths(name),
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
    ext.atb_prelude = prelude
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
    ext.atb_prelude = PYTHON_PRELUDE
    return ext


def extensions() -> list:
    nccl = nccl_build()
    hccl = hccl_npu_build()
    kernels = cuda_kernels()
    core = native_library(
        "atb_ops.lib.libatb_ops",
        sources("csrc/core/*.cpp", "csrc/comm/*.cpp", "csrc/comm/bootstrap/*.cpp", "csrc/comm/shm/*.cpp",
                "csrc/comm/gloo/*.cpp", "csrc/comm/nccl/*.cpp", "csrc/comm/hccl/*.cpp", "csrc/ops/*.cpp",
                "csrc/framework/*.cpp", "csrc/quant/*.cpp") + nccl["sources"] + hccl["sources"] + kernels,
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
    note("core", True, "operators, communicators, torch bindings", ("lib/libatb_ops.so", "lib/libatb_ops_torch.so"))
    # The vendors' C and C++ APIs on CPU, compiled against include/ (headers of our own): no fetch, every install.
    include = str(ROOT / "include")
    hccl_cpu = native_library("atb_ops.ascend_home.lib64.libhccl", sources("csrc/emulated/hccl/*.cpp"),
                              python=False, include_dirs=[include], extra_link_args=["-Wl,-rpath,$ORIGIN/../../lib"])
    hccl_cpu.atb_needs = ["atb_ops.lib.libatb_ops"]
    note("HCCL's C API on CPU", True, "csrc/emulated/hccl against include/hccl", ("ascend_home/lib64/libhccl.so",))
    acl_cpu = native_library("atb_ops.ascend_home.lib64.libascendcl", sources("csrc/emulated/acl/*.cpp"),
                             python=False, prelude=None, include_dirs=[include])
    acl_cpu.libraries = []  # plain C++: nothing of torch in it
    note("ACL runtime on CPU", True, "csrc/emulated/acl against include/acl", ("ascend_home/lib64/libascendcl.so",))
    # libatb.so, all of csrc/emulated/atb/: ATB's C++ API (CreateContext, CreateOperation<P>, ... over the csrc/ops
    # operators) and, in hccl_backend/, the HCCL backend over libhccl.so (what the launcher loads), linked like
    # ATB's own libatb.so against libhccl.so and libascendcl.so, which it finds beside it in ascend_home/lib64.
    runner = native_library("atb_ops.atb_home.lib.libatb",
                            sources("csrc/emulated/atb/*.cpp", "csrc/emulated/atb/hccl_backend/*.cpp"), python=False,
                            include_dirs=[include], define_macros=[("ATB_OPS_VERSION", f'"{VERSION}"')],
                            extra_link_args=["-Wl,-rpath,$ORIGIN/../../lib",
                                             "-Wl,-rpath,$ORIGIN/../../ascend_home/lib64"])
    runner.atb_needs = ["atb_ops.lib.libatb_ops", "atb_ops.ascend_home.lib64.libhccl",
                        "atb_ops.ascend_home.lib64.libascendcl"]
    # No code of its own: it exists to pull in the binding and the runner (kept by --no-as-needed).
    framework = native_library("atb_ops.atb_home.lib.libatb_test_framework", sources("op_plugin/atb_home/*.cpp"),
                               python=False, prelude=None,
                               extra_link_args=["-Wl,-rpath,$ORIGIN/../../lib", "-Wl,--no-as-needed"])
    framework.atb_needs = ["atb_ops.lib.libatb_ops_torch", "atb_ops.atb_home.lib.libatb"]
    note("emulation libraries", True,
         "ATB's layout: ATB's C++ API and the HCCL backend over libhccl.so (libatb.so), the test framework",
         ("atb_home/lib/libatb.so", "atb_home/lib/libatb_test_framework.so"))
    note("vendor headers", True, "include/ (HCCL, ACL runtime, ATB C++ API)",
         ("ascend_home/include/hccl/hccl.h", "ascend_home/include/acl/acl.h", "atb_home/include/atb/atb_infer.h"))
    exts += [hccl_cpu, acl_cpu, runner, framework]
    if os.environ.get("ATB_OPS_TESTING", "0") == "1":
        exts.append(python_module("atb_ops._testing", sources("tests/native/*.cpp"), ["atb_ops.lib.libatb_ops"],
                                  "$ORIGIN/lib"))
        note("test mocks", True, "atb_ops._testing (tests/native), for the test suite")
    else:
        note("test mocks", False, "not requested (ATB_OPS_TESTING=1 builds them, as scripts/setup.sh does)")
    return exts


TORCH_RECORD = "TORCH_BUILT_WITH"  # python/atb_ops/_torch_check.py reads it at import


class TorchPrelude:
    """Each extension's prelude (`atb_prelude`: csrc/torch_prelude.h, or op_plugin/python/python_prelude.h for the
    Python modules) as a GCC precompiled header, forced first (-include) into every C++ unit: most units include
    ATen's Tensor.h, 3-4 s of parsing each here (pybind11's glue 7 s more), and the precompiled form loads in about
    1 s. One header per prelude and set of flags that GCC compares (the -I folders and this project's own -D
    macros, which torch's headers never read, are left out of that set), made once for all extensions, in
    parallel, and kept in build/ while the flags, torch and the prelude stay the same.
    Only a speed-up: where GCC would not use the header (another compiler, flags it rejects, a private setuptools
    or torch call that changed), the build goes on without it and says so."""

    def __init__(self, build: BuildExtension):
        self.build = build
        self.flags: dict[str, list[str]] = {}  # extension name -> flags to add

    def _command(self, ext) -> tuple[list[str], list[str]]:
        """(the compiler and flags before the source, flags after it), as torch's ninja build will use them."""
        import torch.utils.cpp_extension as cpp

        cxx = cpp.get_cxx_compiler() if hasattr(cpp, "get_cxx_compiler") else os.environ.get("CXX", "c++")
        compiler = self.build.compiler
        macros = list(ext.define_macros) + [(name,) for name in ext.undef_macros]
        _, _, _, pp_opts, _ = compiler._setup_compile(self.build.build_temp, macros, ext.include_dirs, [],
                                                      ext.depends, None)
        before = [cxx, *compiler.compiler_so[1:], *compiler._get_cc_args(pp_opts, self.build.debug, None)]
        return before, list(ext.extra_compile_args["cxx"])

    @staticmethod
    def _gch(header: Path) -> Path:
        return header.with_name(header.name + ".gch")

    @staticmethod
    def _shared(flags: list[str]) -> list[str]:
        return [f for f in flags if not f.startswith(("-DTORCH_EXTENSION_NAME=", "-DATB_OPS_"))]

    def prepare(self, extensions: list) -> None:
        """Makes (or finds) the precompiled header of every marked extension and checks that GCC uses it."""
        import torch

        jobs: dict[Path, tuple[list[str], subprocess.Popen | None]] = {}
        wanted: dict[str, tuple[Path, list[str], list[str]]] = {}
        try:
            for ext in (e for e in extensions if getattr(e, "atb_prelude", None)):
                prelude = (ROOT / ext.atb_prelude).read_bytes()
                before, after = self._command(ext)
                before_shared, after_shared = self._shared(before), self._shared(after)
                key_parts = [f for f in before_shared + after_shared if not f.startswith("-I")]
                key = hashlib.sha256(b"\0".join([prelude, torch.__version__.encode(),
                                                 *(f.encode() for f in key_parts)])).hexdigest()[:16]
                header = Path(self.build.build_temp).resolve() / "prelude" / key / Path(ext.atb_prelude).name
                wanted[ext.name] = (header, before, after)
                if header in jobs:
                    continue
                gch = self._gch(header)
                if gch.exists():
                    jobs[header] = ([], None)
                    continue
                header.parent.mkdir(parents=True, exist_ok=True)
                header.write_bytes(prelude)
                command = [*before_shared, "-x", "c++-header", str(header), "-o", str(gch) + ".tmp", *after_shared]
                jobs[header] = (command, subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                                          stderr=subprocess.PIPE, text=True))
        except Exception as e:  # noqa: BLE001  (the private calls of _command changed: build without it)
            say(f"no precompiled torch headers: {type(e).__name__}: {e}")
            return
        for header, (command, job) in jobs.items():
            if job is None:
                continue
            _, err = job.communicate()
            gch = self._gch(header)
            if job.returncode == 0:
                os.replace(str(gch) + ".tmp", gch)
            else:
                Path(str(gch) + ".tmp").unlink(missing_ok=True)
                last = err.strip().splitlines()[-1] if err.strip() else ""
                say(f"no precompiled {header.name}: {command[0]} exited {job.returncode}: {last}")
        for name, (header, before, after) in wanted.items():
            if self._used(header, before, after):
                self.flags[name] = ["-include", str(header)]
        say(f"precompiled torch headers used by {len(self.flags)} of {len(wanted)} extensions")

    @classmethod
    def _used(cls, header: Path, before: list[str], after: list[str]) -> bool:
        """Whether GCC takes the precompiled header with the extension's own flags (it would otherwise parse the
        prelude in every unit, slower than not forcing it at all)."""
        gch = cls._gch(header)
        if not gch.exists():
            return False
        # A probe loads the whole header (about 1 s): once per set of flags, remembered beside it.
        flags = hashlib.sha256("\0".join(before + after).encode()).hexdigest()[:16]
        stamp = header.with_name(f"used-with-{flags}")
        if stamp.exists() and stamp.stat().st_mtime >= gch.stat().st_mtime:
            return True
        probe = subprocess.run([*before, "-include", str(header), "-Winvalid-pch", "-Werror=invalid-pch",
                                "-fsyntax-only", "-x", "c++", "-", *after], input="", capture_output=True,
                               text=True)
        if probe.returncode != 0:
            last = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else ""
            say(f"precompiled {header.name} not used: {last}")
            return False
        stamp.touch()
        return True


class NativeBuild(BuildExtension):
    """BuildExtension that names the plain shared libraries as such and links each extension against the
    libraries it needs (built first: extensions are built in list order), and records the torch it was
    built against next to them (the package refuses to load under another one, with a clear message)."""

    def run(self) -> None:
        if os.environ.get("ATB_OPS_TESTING", "0") != "1":
            # An earlier build with the mocks left them in build/; a wheel built now would carry them.
            for stale in (Path(self.build_lib) / "atb_ops").glob("_testing*.so"):
                stale.unlink()
        super().run()
        import torch

        build_py = self.get_finalized_command("build_py")
        folders = {Path(self.build_lib) / "atb_ops"}
        if self.inplace:
            folders.add(Path(build_py.get_package_dir("atb_ops")))
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / TORCH_RECORD).write_text(f"{torch.__version__}\n")
            record = {"torch": torch.__version__, "parts": PARTS}
            (folder / PARTS_RECORD).write_text(json.dumps(record, indent=1) + "\n")

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
        if not hasattr(self, "torch_prelude"):  # torch has set every extension's flags by now
            self.torch_prelude = TorchPrelude(self)
            self.torch_prelude.prepare(self.extensions)
        ext.extra_compile_args["cxx"] += self.torch_prelude.flags.get(ext.name, [])
        for needed in getattr(ext, "atb_needs", []):
            path = Path(self.get_ext_fullpath(needed))
            if str(path.parent) not in ext.library_dirs:
                ext.library_dirs.append(str(path.parent))
            ext.extra_link_args.append(f"-l:{path.name}")
        if sys.platform.startswith("linux"):
            # torch loads the shared libstdc++; a toolchain that links a static copy into our libraries (seen on
            # the GPU machines' /opt/gcc) leaves two in one process, and the first number a stream formats
            # crashes. Naming the shared one first leaves the static archive nothing to add.
            ext.extra_link_args.append("-l:libstdc++.so.6")
        super().build_extension(ext)


setup(
    name="atb_ops",
    version=VERSION,
    description="ATB-compatible communication operators for Ascend (HCCL), CUDA (NCCL) and CPU ranks",
    package_dir={"": "python"},
    packages=find_packages("python"),
    # The headers: links in the source tree (python/atb_ops/{ascend_home,atb_home}/include -> include/), copied
    # as files into wheels and installs.
    package_data={"atb_ops": ["VERSION", TORCH_RECORD, PARTS_RECORD, "ascend_home/ATB_OPS_EMULATION",
                              "ascend_home/include/acl/*.h",
                              "ascend_home/include/hccl/*.h", "atb_home/include/atb/*.h"]},
    ext_modules=extensions(),
    cmdclass={"build_ext": NativeBuild.with_options(use_ninja=True)},
    python_requires=">=3.10",
    # The torch range the sources support (tested: 2.13 here; 2.11 is the GPU machines' and unverified
    # until a session has one). The build must use the torch that will run it: see README "Install".
    install_requires=["torch>=2.11,<2.14", "numpy"],
)
