"""The ATB_HOME_PATH folder of the emulation, laid out like ATB's: ``include/atb/*.h``,
``lib/libatb_test_framework.so`` and ``lib/libatb.so``; and the ASCEND_HOME_PATH folder, laid out like CANN's.

Every build makes both inside the package. ``atb_ops/atb_home``: its ``libatb_test_framework.so`` links atb_ops'
TorchScript binding and its ``libatb.so``, the HCCL runner for CPU ranks, which links HCCL's C API as atb_ops
implements it. ``atb_ops/ascend_home``: ``lib64/libhccl.so`` (that C API), ``lib64/libascendcl.so`` (the ACL
runtime on CPU) and the headers of both in ``include/``.

Without the packaged atb_home (a build from before it existed), the launcher makes the folder at run time from
symbolic links to the package's libraries, in a private place of the user (``$XDG_RUNTIME_DIR/atb_ops``, else
``~/.cache/atb_ops``, else ``<tmp>/atb_ops-<uid>``): every folder it creates is 0700 and owned by the user,
opened without following a symbolic link, and the links are replaced atomically, so concurrent launchers
never see a half-made folder. Backend "hccl" then runs on shm, and ATB's tests that look for HCCL symbols
in libatb.so skip themselves.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import secrets
import tempfile
import warnings
from collections.abc import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def native_extension() -> str:
    """The file of the atb_ops._C extension, found without loading it.

    Returns:
        Its real path.

    Raises:
        FileNotFoundError: When atb_ops has no built extension.
    """
    spec = importlib.util.find_spec("atb_ops._C")
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise FileNotFoundError("atb_ops._C is not built: the emulation's ATB_HOME_PATH has nothing to point at")
    return os.path.realpath(spec.origin)


def _package_native_libs() -> dict[str, str]:
    """The shared libraries of the package's native ``lib/`` folder (name -> real path); {} if none."""
    spec = importlib.util.find_spec("atb_ops")
    found: dict[str, str] = {}
    for location in (spec.submodule_search_locations or []) if spec else []:
        libdir = os.path.join(location, "lib")
        if os.path.isdir(libdir):
            for name in sorted(os.listdir(libdir)):
                path = os.path.join(libdir, name)
                if ".so" in name and os.path.isfile(path):
                    found.setdefault(name, os.path.realpath(path))
    return found


def native_libraries() -> dict[str, str]:
    """What ATB_HOME_PATH/lib holds: file name -> real path of an atb_ops native library.

    The one place that knows it:
    - ``libatb_test_framework.so`` (ATB's test framework: registers torch.classes.OperationTorch) is
      atb_ops's torch library ``lib/libatb_ops_torch.so``, or, in a build without one, the atb_ops._C
      extension, which registers the same classes;
    - ``libatb.so`` (ATB's runtime; its tests look into it with ``nm -D``) is the native core
      ``lib/libatb_ops.so``, or the extension;
    - every other library of the package's ``lib/`` folder under its own name, so that a library
      loaded by its ATB name finds its dependencies next to it (RUNPATH $ORIGIN).
    Loading one of them by its ATB name gives the object the process has (or will have) loaded through
    ``import atb_ops``: the dynamic loader recognises the file, so the static registrations happen once,
    in either order.

    Returns:
        {"libatb_test_framework.so": path, "libatb.so": path, ...dependencies}.

    Raises:
        FileNotFoundError: When atb_ops has no built extension.
    """
    extension = native_extension()
    package_libs = _package_native_libs()
    return {
        **package_libs,
        "libatb_test_framework.so": package_libs.get("libatb_ops_torch.so", extension),
        "libatb.so": package_libs.get("libatb_ops.so", extension),
    }


def _candidate_bases() -> list[str]:
    bases = []
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir and os.path.isabs(runtime_dir):
        bases.append(os.path.join(runtime_dir, "atb_ops"))
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if os.path.isabs(cache_home):
        bases.append(os.path.join(cache_home, "atb_ops"))
    bases.append(os.path.join(tempfile.gettempdir(), f"atb_ops-{os.geteuid()}"))
    return bases


def _open_private_dir(parent_fd: int, name: str, shown: str) -> int:
    """Creates (0700) or opens folder `name` under `parent_fd` without following a link; checks the owner.

    Raises:
        PermissionError: When it is a link, not a folder, or owned by someone else.
    """
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PermissionError(
                f"{shown} is not a plain folder (a symbolic link or a file sits there); atb_ops will not use it: "
                "remove it"
            ) from None
        raise
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        os.close(fd)
        raise PermissionError(f"{shown} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}); remove it")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o700)  # our own folder, made by an older version or by hand: private again
    return fd


@contextlib.contextmanager
def _private_path(base: str, parts: list[str]) -> Iterator[int]:
    """Opens base's parent normally, then base and each part as private folders; yields the last fd."""
    parent = os.path.dirname(base)
    os.makedirs(parent, exist_ok=True)
    fds = [os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        shown = base
        fds.append(_open_private_dir(fds[-1], os.path.basename(base), shown))
        for part in parts:
            shown = os.path.join(shown, part)
            fds.append(_open_private_dir(fds[-1], part, shown))
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def _place_link(dir_fd: int, name: str, target: str) -> None:
    """Makes `name` a link to `target`, atomically replacing whatever link or file was there."""
    try:
        if os.readlink(name, dir_fd=dir_fd) == target:
            return
    except (FileNotFoundError, OSError):
        pass
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    os.symlink(target, tmp, dir_fd=dir_fd)
    try:
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def home_name(libraries: dict[str, str]) -> str:
    """The folder name for a set of libraries: ``home-<16 hex digits of their paths' hash>``."""
    digest = hashlib.sha256(json.dumps(sorted(libraries.items())).encode()).hexdigest()
    return f"home-{digest[:16]}"


def packaged_atb_home() -> str | None:
    """The package's own ``atb_home`` folder, when the build made both of its libraries; else None."""
    spec = importlib.util.find_spec("atb_ops")
    for location in (spec.submodule_search_locations or []) if spec else []:
        home = os.path.join(location, "atb_home")
        libs = [os.path.join(home, "lib", name) for name in ("libatb_test_framework.so", "libatb.so")]
        if all(os.path.isfile(lib) for lib in libs):
            return os.path.realpath(home)
    return None


def packaged_ascend_home() -> str | None:
    """The package's CANN-like folder (``atb_ops/ascend_home``: include/acl, include/hccl, lib64/libascendcl.so,
    lib64/libhccl.so), when the build made it; else None."""
    spec = importlib.util.find_spec("atb_ops")
    for location in (spec.submodule_search_locations or []) if spec else []:
        home = os.path.join(location, "ascend_home")
        needed = ["lib64/libhccl.so", "lib64/libascendcl.so", "include/hccl/hccl.h", "include/acl/acl.h"]
        if all(os.path.isfile(os.path.join(home, name)) for name in needed):
            return os.path.realpath(home)
    return None


def ensure_atb_home(libraries: dict[str, str] | None = None) -> str:
    """Creates (or checks) the ATB_HOME_PATH folder and returns its path.

    Args:
        libraries: name -> target; native_libraries() when None.

    Returns:
        The folder's path; its ``lib/`` holds one link per library.

    Raises:
        PermissionError: When no private place can be made (each candidate's reason is given).
        FileNotFoundError: When atb_ops has no built extension.
    """
    if libraries is None:
        packaged = packaged_atb_home()
        if packaged is not None:
            return packaged
        libraries = native_libraries()
    name = home_name(libraries)
    reasons = []
    for base in _candidate_bases():
        try:
            with _private_path(base, [name, "lib"]) as lib_fd:
                for lib_name, target in libraries.items():
                    _place_link(lib_fd, lib_name, target)
            for reason in reasons:
                warnings.warn(f"atb_ops: ATB_HOME_PATH not made under {reason}", stacklevel=2)
            return os.path.join(base, name)
        except OSError as err:
            reasons.append(f"{base}: {err}")
    raise PermissionError("cannot make the emulation's ATB_HOME_PATH folder:\n  " + "\n  ".join(reasons))
