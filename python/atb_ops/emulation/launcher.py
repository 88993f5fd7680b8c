"""``python -m atb_ops run`` and ``python -m atb_ops env``: ATB scripts on CPU or CUDA, unchanged.

``run`` replaces itself (exec) with ``python SCRIPT ARGS`` / ``python -m MODULE ARGS`` / ``python -c CODE``
in an environment that turns the NPU emulation on: the argv, working directory, exit status and
signals are the script's own, and every Python process it starts (multiprocessing spawn/forkserver,
torch.multiprocessing.spawn, subprocess, torchrun) inherits the same environment:

- PYTHONPATH starts with a folder holding the emulated ``torch_npu`` and ``torch_atb`` packages;
- ATB_HOME_PATH is a folder laid out like ATB's (``include/atb``, ``lib/libatb.so``,
  ``lib/libatb_test_framework.so``) and ASCEND_HOME_PATH one laid out like CANN's (``include/acl``,
  ``include/hccl``, ``lib64/libascendcl.so``, ``lib64/libhccl.so``), both as CANN's set_env.sh sets them, with
  LD_LIBRARY_PATH starting with their library folders, so ATB's and HCCL's C++ programs build and run unchanged;
- ATB_OPS_NPU_EMULATION says where NPU tensors live ("cpu" or "cuda").

``env`` prints those variables as shell ``export`` lines instead. Where a real torch_npu is importable, or a
real Ascend toolkit is installed (ASCEND_TOOLKIT_HOME, an ASCEND_HOME_PATH that is not atb_ops', or a default
install under /usr/local/Ascend), both refuse (``--force-emulation`` overrides): the emulation never shadows a
real NPU stack silently.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from atb_ops import _spawn_scope
from atb_ops.emulation import atb_home, config

RUN_USAGE = """\
usage: python -m atb_ops run [--device cpu|cuda] [--force-emulation] SCRIPT [ARGS...]
       python -m atb_ops run [--device cpu|cuda] [--force-emulation] -m MODULE [ARGS...]
       python -m atb_ops run [--device cpu|cuda] [--force-emulation] -c CODE [ARGS...]

Runs an ATB / torch_npu script like `python SCRIPT ARGS`, with torch_npu, torch_atb and ATB_HOME_PATH
emulated on CPU ranks (--device cpu, the default) or on CUDA (--device cuda: npu:N is cuda:N), in it
and in every Python process it starts.
"""
ENV_USAGE = """\
usage: python -m atb_ops env [--device cpu|cuda] [--force-emulation]

Prints the environment of `python -m atb_ops run` as shell export lines (PYTHONPATH, ATB_HOME_PATH,
ASCEND_HOME_PATH, LD_LIBRARY_PATH, ATB_OPS_NPU_EMULATION), as CANN's and ATB's set_env.sh do:
    eval "$(python -m atb_ops env)"; python -m pytest tests_written_for_npu/
    eval "$(python -m atb_ops env)"; cc prog.c -I$ASCEND_HOME_PATH/include -L$ASCEND_HOME_PATH/lib64 -lhccl
"""


class UsageError(Exception):
    """Bad command line: the message and the usage text go to stderr, exit status 2."""


class LaunchError(Exception):
    """The emulation cannot start (a real torch_npu, no GPU, no private folder): exit status 1."""


@dataclass
class Options:
    """What the command line asked for."""

    device: str = "cpu"
    force: bool = False
    target: list[str] = field(default_factory=list)  # python's arguments: SCRIPT.., -m MODULE.., -c CODE..


def _parse_options(argv: list[str], takes_target: bool) -> Options:
    """Reads the launcher's options up to the first argument that belongs to Python."""
    opts = Options()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--device" or arg.startswith("--device="):
            if arg == "--device":
                if i + 1 >= len(argv):
                    raise UsageError("--device needs a value: cpu or cuda")
                i += 1
                value = argv[i]
            else:
                value = arg.split("=", 1)[1]
            if value not in config.DEVICES:
                raise UsageError(f"--device {value!r}: expected one of {', '.join(config.DEVICES)}")
            opts.device = value
        elif arg == "--force-emulation":
            opts.force = True
        elif arg == "--":
            i += 1
            break
        elif not takes_target:
            raise UsageError(f"unexpected argument {arg!r}")
        elif arg in ("-m", "-c"):
            if i + 1 >= len(argv):
                raise UsageError(f"{arg} needs a {'module' if arg == '-m' else 'command'}")
            break
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg!r} (options come before SCRIPT, -m MODULE or -c CODE)")
        else:
            break
        i += 1
    opts.target = argv[i:]
    if takes_target and not opts.target:
        raise UsageError("nothing to run: give SCRIPT, -m MODULE or -c CODE")
    return opts


def parse_run_args(argv: list[str]) -> Options:
    """Parses ``run``'s arguments.

    Args:
        argv: The arguments after ``run``.

    Returns:
        The options; ``target`` is what follows ``python`` (SCRIPT ARGS, -m MODULE ARGS or -c CODE ARGS).

    Raises:
        UsageError: On an unknown option, a bad --device, or nothing to run.
    """
    return _parse_options(argv, takes_target=True)


def parse_env_args(argv: list[str]) -> Options:
    """Parses ``env``'s arguments (options only).

    Raises:
        UsageError: On an unknown argument or a bad --device.
    """
    return _parse_options(argv, takes_target=False)


def pythonpath_dir() -> str:
    """The folder holding the emulated torch_npu and torch_atb packages."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "pythonpath")


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a or os.curdir, b)
    except OSError:
        return False


def find_real_torch_npu() -> str | None:
    """Where a real torch_npu would be imported from here, not counting the emulation's folder.

    Returns:
        Its location, or None when only the emulation (or nothing) provides torch_npu.
    """
    own = pythonpath_dir()
    loaded = sys.modules.get("torch_npu")
    if loaded is not None:
        location = getattr(loaded, "__file__", None) or repr(loaded)
        return None if _same_dir(os.path.dirname(os.path.dirname(location)), own) else location
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if not _same_dir(p, own)]
    try:
        spec = importlib.util.find_spec("torch_npu")
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path[:] = saved
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in"):
        return spec.origin
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else repr(spec)


def _check_no_real_torch_npu(force: bool) -> None:
    real = find_real_torch_npu()
    if real is not None and not force:
        raise LaunchError(
            f"a real torch_npu is importable here ({real}); the NPU emulation would shadow it.\n"
            "On an NPU machine run the script with plain `python`. To emulate anyway (the emulated torch_npu "
            "comes first on PYTHONPATH and torch's backend auto-loading is turned off), add --force-emulation."
        )


def find_real_ascend_toolkit(base: Mapping[str, str] | None = None) -> str | None:
    """Where a real Ascend toolkit is installed, if one is.

    Args:
        base: The environment to look at (os.environ when None).

    Returns:
        ASCEND_TOOLKIT_HOME when set; else ASCEND_HOME_PATH when it is set and is not atb_ops' own ascend_home; else
        ATB_HOME_PATH when its lib/libatb.so is not atb_ops' (a real ATB); else the first default install folder
        (as root, or under the user's home) that exists; None when there is none.
    """
    base = os.environ if base is None else base
    if base.get(config.TOOLKIT_ENV):
        return f"{config.TOOLKIT_ENV}={base[config.TOOLKIT_ENV]}"
    ascend = base.get(config.ASCEND_ENV)
    if ascend and not os.path.isfile(os.path.join(ascend, config.EMULATION_MARKER)):
        return f"{config.ASCEND_ENV}={ascend}"
    atb = base.get(config.HOME_ENV)
    if atb and os.path.isfile(os.path.join(atb, "lib", "libatb.so")) and not _is_atb_ops_library(
            os.path.join(atb, "lib", "libatb.so")):
        return f"{config.HOME_ENV}={atb}"
    home = base.get("HOME") or os.path.expanduser("~")
    for folder in config.TOOLKIT_INSTALLS:
        folder = home + folder[1:] if folder.startswith("~/") else folder
        if os.path.isdir(folder):
            return folder
    return None


def _is_atb_ops_library(path: str) -> bool:
    """Whether a libatb.so is atb_ops' (this install's, or another's left in ATB_HOME_PATH by an earlier `env`): its
    bytes name atb_ops, which ATB's own never do."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if os.path.commonpath([package, os.path.realpath(path)]) == package:
        return True
    try:
        with open(path, "rb") as f:
            return b"atb_ops" in f.read()
    except OSError:
        return False


def _check_no_real_toolkit(force: bool) -> None:
    real = find_real_ascend_toolkit()
    if real is not None and not force:
        raise LaunchError(
            f"a real Ascend toolkit is installed here ({real}); the emulation's ASCEND_HOME_PATH would shadow it.\n"
            "On an NPU machine use the toolkit's set_env.sh. To emulate anyway, add --force-emulation."
        )


def _check_device(device: str) -> None:
    if device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        raise LaunchError(
            "--device cuda: torch sees no CUDA device here (torch.cuda.is_available() is False, "
            f"torch {torch.__version__}); use --device cpu"
        )


def emulation_env(device: str, force: bool = False, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that turn the emulation on, for a process started with environment `base`.

    Args:
        device: "cpu" or "cuda".
        force: Also set when a real torch_npu is present: turns torch's backend auto-loading off so the
            real one is not loaded behind the emulation's back.
        base: The environment to extend (os.environ when None); only its PYTHONPATH and LD_LIBRARY_PATH are read.

    Returns:
        {name: value} to set: PYTHONPATH (the emulation folder first, the rest kept), ATB_HOME_PATH,
        ASCEND_HOME_PATH (when the build made it), LD_LIBRARY_PATH (their library folders first, the rest
        kept), ATB_OPS_NPU_EMULATION, and TORCH_DEVICE_BACKEND_AUTOLOAD=0 when forced.

    Raises:
        PermissionError: When the ATB_HOME_PATH folder cannot be made.
        FileNotFoundError: When atb_ops has no built extension.
    """
    base = os.environ if base is None else base
    own = pythonpath_dir()
    existing = base.get("PYTHONPATH", "")
    entries = existing.split(os.pathsep) if existing else []
    if entries and _same_dir(entries[0], own):
        pythonpath = existing
    else:
        pythonpath = os.pathsep.join([own, *entries]) if existing else own
    home = atb_home.ensure_atb_home()
    env = {"PYTHONPATH": pythonpath, config.HOME_ENV: home}
    library_dirs = [os.path.join(home, "lib")]
    ascend = atb_home.packaged_ascend_home()
    if ascend is not None:
        env[config.ASCEND_ENV] = ascend
        library_dirs.append(os.path.join(ascend, "lib64"))
    existing_libs = [d for d in base.get(config.LIBRARY_PATH_ENV, "").split(os.pathsep) if d]
    env[config.LIBRARY_PATH_ENV] = os.pathsep.join(
        library_dirs + [d for d in existing_libs if not any(_same_dir(d, mine) for mine in library_dirs)]
    )
    env[config.MODE_ENV] = device
    if force:
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    return env


def _interpreter_flags() -> list[str]:
    """This interpreter's flags (-W, -X, -O, ...), minus those that would hide PYTHONPATH (-E, -I)."""
    flags = []
    for flag in subprocess._args_from_interpreter_flags():
        if flag == "-E":
            continue
        if flag == "-I":  # isolated = -E -s (-P from 3.11): keep all but -E
            flags.extend(["-s", "-P"] if sys.version_info >= (3, 11) else ["-s"])
        else:
            flags.append(flag)
    return flags


def prepare(opts: Options) -> dict[str, str]:
    """Checks that the emulation may start and returns the complete environment for it.

    Raises:
        LaunchError: When a real torch_npu is importable or a real Ascend toolkit is installed (without
            --force-emulation), CUDA is missing
            for --device cuda, or the ATB_HOME_PATH folder cannot be made.
    """
    _check_no_real_torch_npu(opts.force)
    _check_no_real_toolkit(opts.force)
    _check_device(opts.device)
    try:
        return {**os.environ, **emulation_env(opts.device, opts.force)}
    except OSError as err:
        raise LaunchError(str(err)) from None


def _fail(err: Exception, usage: str) -> int:
    if isinstance(err, UsageError):
        print(f"atb_ops: {err}\n\n{usage}", file=sys.stderr, end="")
        return 2
    print(f"atb_ops: {err}", file=sys.stderr)
    return 1


def run_main(argv: list[str]) -> int:
    """``python -m atb_ops run``: execs Python on the target; returns only when it cannot start.

    Args:
        argv: The arguments after ``run``.

    Returns:
        0 for --help; 2 for a usage error; 1 when the emulation cannot start. On success it does not
        return: the process becomes the script.
    """
    if argv[:1] in (["-h"], ["--help"]):
        print(RUN_USAGE, end="")
        return 0
    try:
        opts = parse_run_args(argv)
        env = prepare(opts)
    except (UsageError, LaunchError) as err:
        return _fail(err, RUN_USAGE)
    _scope_the_job(env)
    if not sys.executable:
        return _fail(LaunchError("sys.executable is unknown: cannot start Python"), RUN_USAGE)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *_interpreter_flags(), *opts.target], env)
    return 1  # not reached


# Variables by which a launcher tells a process which rank of a larger job it is.
_RANK_VARIABLES = ("RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def _scope_the_job(env: dict[str, str]) -> None:
    """Gives a run that is a whole job an ATB_OPS_JOB_ID of its own (in `env`); leaves a run that is one rank alone.

    A whole job: its processes share the id, so a job whose processes form several communicators (ATB's
    multi-communicator tests: 8 processes, groups of 4 by commDomain) is scoped by it, not by the parent process
    (whose scope refuses more processes than a communicator has ranks: two jobs at once). One rank of a launched
    job (``mpirun ... python -m atb_ops run``, torchrun, srun; a job id set already): an id per run would keep
    it from its peers, so the launcher's proof, or the parent process, scopes it as it would ``python script.py``.

    Args:
        env: The environment the script gets; ATB_OPS_JOB_ID is set in it when the run is a whole job.
    """
    from atb_ops import _C  # noqa: PLC0415  (loaded already: `python -m atb_ops` imported the package)

    if env.get("ATB_OPS_JOB_ID") or _C.environment_proves_job() or any(env.get(v) for v in _RANK_VARIABLES):
        return
    env["ATB_OPS_JOB_ID"] = f"{_spawn_scope.RUN_JOB_PREFIX}{uuid.uuid4().hex}"


def format_exports(env: Mapping[str, str]) -> str:
    """``export NAME=value`` lines, values shell-quoted, in a stable order."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())


def env_main(argv: list[str]) -> int:
    """``python -m atb_ops env``: prints the emulation's environment as shell export lines.

    Args:
        argv: The arguments after ``env``.

    Returns:
        0 on success, 2 for a usage error, 1 when the emulation cannot start (nothing is printed).
    """
    if argv[:1] in (["-h"], ["--help"]):
        print(ENV_USAGE, end="")
        return 0
    try:
        opts = parse_env_args(argv)
        _check_no_real_torch_npu(opts.force)
        _check_no_real_toolkit(opts.force)
        _check_device(opts.device)
        env = emulation_env(opts.device, opts.force)
    except (UsageError, LaunchError) as err:
        return _fail(err, ENV_USAGE)
    except OSError as err:
        return _fail(LaunchError(str(err)), ENV_USAGE)
    sys.stdout.write(format_exports(env))
    return 0
