"""ATB_HOME_PATH of the emulation: a private folder laid out like ATB's, whose libraries register the very
same OperationTorch as ``import atb_ops``, whichever comes first."""

from __future__ import annotations

import os
import stat
import textwrap

import pytest

from atb_ops.emulation import atb_home
from tests.support.emulation import output_of, run_emulated


@pytest.fixture
def private_places(tmp_path, monkeypatch):
    """XDG_RUNTIME_DIR and XDG_CACHE_HOME inside tmp_path; returns (runtime base, cache base)."""
    runtime, cache = tmp_path / "run", tmp_path / "cache"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return runtime / "atb_ops", cache / "atb_ops"


@pytest.fixture
def fake_libs(tmp_path):
    a, b = tmp_path / "liba.so", tmp_path / "libb.so"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    return {"libatb_test_framework.so": str(a), "libatb.so": str(b)}


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_native_libraries_are_files_of_the_package():
    import atb_ops

    package = os.path.dirname(os.path.realpath(atb_ops.__file__))
    libs = atb_home.native_libraries()
    assert {"libatb_test_framework.so", "libatb.so"} <= set(libs)
    for path in libs.values():
        assert os.path.isabs(path) and os.path.isfile(path) and path.startswith(package + os.sep), path


def test_layout_and_permissions(private_places, fake_libs):
    runtime_base, _ = private_places
    home = atb_home.ensure_atb_home(fake_libs)
    assert os.path.dirname(home) == str(runtime_base)
    assert os.path.basename(home) == atb_home.home_name(fake_libs)
    for folder in (runtime_base, home, os.path.join(home, "lib")):
        assert _mode(folder) == 0o700 and os.lstat(folder).st_uid == os.geteuid()
    for name, target in fake_libs.items():
        link = os.path.join(home, "lib", name)
        assert os.path.islink(link) and os.readlink(link) == target
    assert sorted(os.listdir(os.path.join(home, "lib"))) == sorted(fake_libs)  # no temporaries left
    assert atb_home.ensure_atb_home(fake_libs) == home  # idempotent


def test_links_are_repaired(private_places, fake_libs):
    home = atb_home.ensure_atb_home(fake_libs)
    link = os.path.join(home, "lib", "libatb.so")
    os.unlink(link)
    os.symlink("/nonexistent", link)
    other = os.path.join(home, "lib", "libatb_test_framework.so")
    os.unlink(other)
    with open(other, "w") as f:
        f.write("a plain file")
    assert atb_home.ensure_atb_home(fake_libs) == home
    assert os.readlink(link) == fake_libs["libatb.so"]
    assert os.readlink(other) == fake_libs["libatb_test_framework.so"]


def test_loose_permissions_of_own_folder_are_tightened(private_places, fake_libs):
    runtime_base, _ = private_places
    runtime_base.mkdir(mode=0o755)
    os.chmod(runtime_base, 0o755)
    atb_home.ensure_atb_home(fake_libs)
    assert _mode(runtime_base) == 0o700


def test_a_symlink_in_place_of_the_folder_is_not_followed(private_places, fake_libs, tmp_path):
    runtime_base, cache_base = private_places
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runtime_base.symlink_to(elsewhere)
    with pytest.warns(UserWarning, match="not a plain folder"):
        home = atb_home.ensure_atb_home(fake_libs)
    assert os.path.dirname(home) == str(cache_base)  # the next private place
    assert os.listdir(elsewhere) == []  # nothing was written through the link


def test_a_file_in_place_of_every_folder_is_reported(private_places, fake_libs, monkeypatch, tmp_path):
    runtime_base, cache_base = private_places
    monkeypatch.setattr(atb_home, "_candidate_bases", lambda: [str(runtime_base), str(cache_base)])
    runtime_base.write_text("")
    cache_base.parent.mkdir()
    cache_base.symlink_to(tmp_path)
    with pytest.raises(PermissionError) as err:
        atb_home.ensure_atb_home(fake_libs)
    assert str(runtime_base) in str(err.value) and str(cache_base) in str(err.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_a_folder_of_another_user_is_refused(private_places, fake_libs, monkeypatch):
    runtime_base, _ = private_places
    monkeypatch.setattr(atb_home, "_candidate_bases", lambda: [str(runtime_base)])
    runtime_base.mkdir(mode=0o700)
    os.chown(runtime_base, 12345, 12345)
    with pytest.raises(PermissionError, match="belongs to uid 12345"):
        atb_home.ensure_atb_home(fake_libs)


# The checks of one load order, in a fresh process: OperationTorch works, and the file behind
# lib/libatb_test_framework.so is mapped once (one copy of its static registrations), whatever names
# loaded it.
CHECK_ONE_COPY = """
import json, os, torch
from atb_ops.emulation.atb_home import native_libraries
ext = native_libraries()["libatb_test_framework.so"]
inode = os.stat(ext).st_ino
maps = [line.split() for line in open("/proc/self/maps")]
mapped = {m[5] for m in maps if len(m) > 5 and int(m[4]) == inode}
assert len(mapped) == 1, mapped
op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
assert json.loads(op.set_param(json.dumps({"rank": 0, "rankSize": 1, "backend": "shm"}))) == {"result": 0}
assert op.execute([torch.arange(3.0)])[0].tolist() == [[0.0, 1.0, 2.0]]
import atb_ops  # the rest of atb_ops is whole too: its backends, torch ops and Python side
assert atb_ops.backends() and atb_ops.shm_empty(4).numel() == 4
assert torch.ops.atb_ops.all_to_all_v.default is not None
print("ok", sorted(mapped)[0] == ext)
"""

LOAD_ORDERS = {
    "load_library first": """
        import os, torch
        torch.classes.load_library(os.path.join(os.environ["ATB_HOME_PATH"], "lib/libatb_test_framework.so"))
        op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")  # registered before atb_ops
        import atb_ops
        torch.classes.load_library(os.path.join(os.environ["ATB_HOME_PATH"], "lib/libatb_test_framework.so"))
        """,
    "import atb_ops first": """
        import os, torch, atb_ops
        torch.classes.load_library(os.path.join(os.environ["ATB_HOME_PATH"], "lib/libatb_test_framework.so"))
        """,
    "dlopen by the link's own path": """
        import ctypes, os, torch
        home = os.environ["ATB_HOME_PATH"]
        ctypes.CDLL(os.path.join(home, "lib/libatb_test_framework.so"), mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(os.path.join(home, "lib/libatb.so"), mode=ctypes.RTLD_GLOBAL)
        import atb_ops
        """,
    "torch_npu, then the library": """
        import os, torch, torch_npu
        torch.classes.load_library(os.path.join(os.environ["ATB_HOME_PATH"], "lib/libatb_test_framework.so"))
        torch.classes.load_library(os.path.join(os.environ["ATB_HOME_PATH"], "lib/libatb.so"))
        """,
}


@pytest.mark.parametrize("order", list(LOAD_ORDERS))
def test_one_copy_of_the_classes_in_every_load_order(order):
    proc = run_emulated(textwrap.dedent(LOAD_ORDERS[order]) + CHECK_ONE_COPY)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok True"), output_of(proc)
    assert "Traceback" not in proc.stderr, output_of(proc)
