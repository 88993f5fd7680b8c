"""The vendor C APIs of the CANN-like layout every install has (`python -m atb_ops env`'s ASCEND_HOME_PATH), used
as users use them: a C program against the installed hccl/hccl.h with -lhccl on 2-3 rank processes, a C++ program
against the installed acl/acl.h with -lascendcl, and HCCL's handle checks (a second HcclCommDestroy, a call on
a destroyed or made-up communicator: HCCL_E_PARA, never a crash) through ctypes."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from atb_ops.emulation import atb_home, launcher
from tests.support.launch import run_programs
from tests.support.paths import REPO_ROOT

ASCEND_HOME = atb_home.packaged_ascend_home()
HCCL_E_PARA = 1
HCCL_E_PTR = 2
HCCL_E_NOT_SUPPORT = 5
HCCL_E_REMOTE = 21


def _compiler(name: str, default: str) -> str:
    found = shutil.which(os.environ.get(name, default))
    if found is None:
        pytest.skip(f"no {default} compiler")
    return found


@pytest.fixture(scope="module")
def ascend_home() -> Path:
    assert ASCEND_HOME is not None, "this install has no atb_ops/ascend_home (every build makes it)"
    return Path(ASCEND_HOME)


@pytest.fixture(scope="module")
def user_env() -> dict[str, str]:
    """The environment of `eval "$(python -m atb_ops env)"`: what finds libhccl.so at run time."""
    return {**os.environ, **launcher.emulation_env("cpu"), "ATB_OPS_TIMEOUT": "60"}


def _build(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-4000:]}"


@pytest.fixture(scope="module")
def hccl_c_program(ascend_home, tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("c_program") / "hccl_allreduce_alltoallv"
    source = REPO_ROOT / "tests/hccl/c_programs/hccl_allreduce_alltoallv.c"
    _build([_compiler("CC", "cc"), "-Wall", "-Wextra", "-Werror", str(source), f"-I{ascend_home}/include",
            f"-L{ascend_home}/lib64", "-lhccl", "-o", str(exe)])
    return exe


@pytest.mark.parametrize("world_size", [2, 3])
def test_c_program_allreduce_and_alltoallv_on_rank_processes(hccl_c_program, user_env, tmp_path, world_size):
    root_info = tmp_path / "root_info.bin"
    exits = run_programs(lambda r: [hccl_c_program, str(r), str(world_size), root_info], world_size, user_env,
                         timeout_s=120)
    for rank, e in enumerate(exits):
        assert e.returncode == 0, f"rank {rank} exited {e.returncode}: {e.stdout}{e.stderr[-3000:]}"
        assert e.stdout.strip() == f"rank {rank}: ok", e.stdout + e.stderr


def test_c_program_needs_the_library_path_like_cann(hccl_c_program, tmp_path):
    """Without LD_LIBRARY_PATH (set_env.sh's, or `atb_ops env`'s) the loader does not find libhccl.so, as with
    CANN: the program was linked by name (-lhccl), not to a path inside the package."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run([str(hccl_c_program), "0", "1", str(tmp_path / "ri")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode != 0 and "libhccl.so" in proc.stderr, proc.stderr


def test_acl_runtime_program(ascend_home, user_env, tmp_path):
    exe = tmp_path / "acl_runtime_sample"
    _build([_compiler("CXX", "c++"), "-std=c++17", "-Wall", "-Wextra", "-Werror",
            str(REPO_ROOT / "tests/native/standalone/acl_runtime_sample.cpp"), f"-I{ascend_home}/include",
            f"-L{ascend_home}/lib64", "-lascendcl", "-lpthread", "-o", str(exe)])
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env={**user_env, "ATB_OPS_NPU_COUNT": "4"},
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    words = proc.stdout.split()
    assert words[:2] == ["acl", "runtime:"] and int(words[2]) >= 100, proc.stdout


@pytest.fixture(scope="module")
def hccl(ascend_home) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(ascend_home / "lib64" / "libhccl.so"))
    lib.atbOpsHcclCpuLastError.restype = ctypes.c_char_p
    for name in ("HcclCommDestroy", "HcclGetRankSize", "HcclCommInitRootInfo", "HcclGetRootInfo"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def _one_rank_comm(hccl: ctypes.CDLL) -> ctypes.c_void_p:
    root_info = ctypes.create_string_buffer(4108)  # HCCL_ROOT_INFO_BYTES
    assert hccl.HcclGetRootInfo(root_info) == 0
    comm = ctypes.c_void_p()
    assert hccl.HcclCommInitRootInfo(ctypes.c_uint32(1), root_info, ctypes.c_uint32(0), ctypes.byref(comm)) == 0
    assert comm.value
    return comm


def _store_server_threads() -> int:
    """Threads of this process that serve a torch TCPStore (torch names them pt_tcpstore_uv)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as f:
            names.append(f.read().strip())
    return sum(name.startswith("pt_tcpstore") for name in names)


def test_root_infos_of_one_process_share_one_store_server(hccl):
    """Every HcclGetRootInfo of a process names the same port with a token of its own: one TCPStore server serves
    them all (a server per root info left a thread and a port behind for each, and each joiner's new connection cost
    that server a reverse name lookup), and communicators made from them work."""
    threads_before = _store_server_threads()
    infos = []
    for _ in range(6):
        root_info = ctypes.create_string_buffer(4108)
        assert hccl.HcclGetRootInfo(root_info) == 0, hccl.atbOpsHcclCpuLastError()
        infos.append(root_info)
    fields = [info.value.decode().split("|") for info in infos]
    assert len({f[1] for f in fields}) == 6, fields  # a token each
    assert len({(f[2], f[3]) for f in fields}) == 1, fields  # one address and port
    assert _store_server_threads() - threads_before <= 1
    for info in infos[:2]:
        comm = ctypes.c_void_p()
        rc = hccl.HcclCommInitRootInfo(ctypes.c_uint32(1), info, ctypes.c_uint32(0), ctypes.byref(comm))
        assert rc == 0, hccl.atbOpsHcclCpuLastError()
        assert hccl.HcclCommDestroy(comm) == 0


def test_a_forked_child_serves_its_root_infos_itself(hccl):
    """A child made by fork() after its parent made a root info serves its own from a server of its own (the
    parent's server thread is not in it, and the parent's connections are not its to share)."""
    parent_info = ctypes.create_string_buffer(4108)
    assert hccl.HcclGetRootInfo(parent_info) == 0
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its root info's port, then leave without running the parent's cleanups
        code = 1
        try:
            child_info = ctypes.create_string_buffer(4108)
            if hccl.HcclGetRootInfo(child_info) == 0:
                os.write(write_end, child_info.value)
                code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    # Bounded: a child of a process with threads could in principle block on a lock taken before the fork.
    if not select.select([read_end], [], [], 60)[0]:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child made no root info within 60 s")
    with os.fdopen(read_end, "rb") as pipe:
        child_text = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, child_text
    assert child_text.split("|")[3] != parent_info.value.decode().split("|")[3], (child_text, parent_info.value)


def test_hccl_double_destroy_and_use_after_destroy_return_para(hccl):
    comm = _one_rank_comm(hccl)
    size = ctypes.c_uint32(0)
    assert hccl.HcclGetRankSize(comm, ctypes.byref(size)) == 0 and size.value == 1
    assert hccl.HcclCommDestroy(comm) == 0
    assert hccl.HcclCommDestroy(comm) == HCCL_E_PARA
    assert b"already destroyed" in hccl.atbOpsHcclCpuLastError()
    assert hccl.HcclGetRankSize(comm, ctypes.byref(size)) == HCCL_E_PARA
    assert b"HcclGetRankSize" in hccl.atbOpsHcclCpuLastError()
    # A new communicator never gets the destroyed one's handle.
    fresh = _one_rank_comm(hccl)
    assert fresh.value != comm.value
    assert hccl.HcclCommDestroy(comm) == HCCL_E_PARA
    assert hccl.HcclCommDestroy(fresh) == 0


def test_hccl_made_up_and_null_handles(hccl):
    size = ctypes.c_uint32(0)
    assert hccl.HcclGetRankSize(ctypes.c_void_p(0x1234), ctypes.byref(size)) == HCCL_E_PARA
    assert b"not a live communicator" in hccl.atbOpsHcclCpuLastError()
    assert hccl.HcclCommDestroy(ctypes.c_void_p(0x1234)) == HCCL_E_PARA
    assert hccl.HcclCommDestroy(None) == HCCL_E_PTR


HCCL_FP32, HCCL_SUM = 4, 0  # HcclDataType / HcclReduceOp values of hccl_types.h


def test_null_buffers_return_hccl_e_ptr_and_count_zero_succeeds(hccl):
    """HCCL checks sendBuf / recvBuf for null (HCCL_E_PTR) after returning success for a count of 0: a null buffer
    where data is due is refused by name, never dereferenced (it crashed the process with SIGSEGV)."""
    comm = _one_rank_comm(hccl)
    data = (ctypes.c_float * 4)(1, 2, 3, 4)
    out = (ctypes.c_float * 4)()
    counts = (ctypes.c_uint64 * 1)(4)
    displs = (ctypes.c_uint64 * 1)(0)
    calls = {
        "HcclAllReduce sendBuf": lambda: hccl.HcclAllReduce(None, out, ctypes.c_uint64(4), HCCL_FP32, HCCL_SUM, comm,
                                                            None),
        "HcclAllReduce recvBuf": lambda: hccl.HcclAllReduce(data, None, ctypes.c_uint64(4), HCCL_FP32, HCCL_SUM, comm,
                                                            None),
        "HcclAllGather sendBuf": lambda: hccl.HcclAllGather(None, out, ctypes.c_uint64(4), HCCL_FP32, comm, None),
        "HcclBroadcast buf": lambda: hccl.HcclBroadcast(None, ctypes.c_uint64(4), HCCL_FP32, 0, comm, None),
        "HcclReduceScatter recvBuf": lambda: hccl.HcclReduceScatter(data, None, ctypes.c_uint64(4), HCCL_FP32,
                                                                    HCCL_SUM, comm, None),
        "HcclAlltoAllV recvBuf": lambda: hccl.HcclAlltoAllV(data, counts, displs, HCCL_FP32, None, counts, displs,
                                                            HCCL_FP32, comm, None),
        "HcclReduce sendBuf": lambda: hccl.HcclReduce(None, out, ctypes.c_uint64(4), HCCL_FP32, HCCL_SUM, 0, comm,
                                                      None),
    }
    try:
        for what, call in calls.items():
            assert call() == HCCL_E_PTR, what
            assert what.split()[1].encode() + b" is null" in hccl.atbOpsHcclCpuLastError(), what
        assert hccl.HcclAllReduce(None, None, ctypes.c_uint64(0), HCCL_FP32, HCCL_SUM, comm, None) == 0
        assert hccl.HcclAllReduce(data, out, ctypes.c_uint64(4), HCCL_FP32, HCCL_SUM, comm, None) == 0
        assert list(out) == [1.0, 2.0, 3.0, 4.0]
    finally:
        assert hccl.HcclCommDestroy(comm) == 0


# A rank of HCCL's C API through ctypes: argv rank, nRanks it passes, root info file, seconds to stay after init,
# seconds to wait before it.
# argv: rank, (the program's own), root info file. libhccl.so loaded; rank 0 writes the root info, the others read it.
_SHARE_ROOT_INFO = """
import ctypes, os, sys, time
rank, path = int(sys.argv[1]), sys.argv[3]
lib = ctypes.CDLL(os.path.join(os.environ["ASCEND_HOME_PATH"], "lib64", "libhccl.so"))
lib.atbOpsHcclCpuLastError.restype = ctypes.c_char_p
info = ctypes.create_string_buffer(4108)
if rank == 0:
    assert lib.HcclGetRootInfo(info) == 0
    open(path + ".tmp", "wb").write(info.raw)
    os.rename(path + ".tmp", path)
else:
    while not os.path.exists(path):
        time.sleep(0.01)
    ctypes.memmove(info, open(path, "rb").read(), 4108)
"""

_INIT_RANK = _SHARE_ROOT_INFO + """
n_ranks, linger, delay = int(sys.argv[2]), float(sys.argv[4]), float(sys.argv[5])
comm = ctypes.c_void_p()
time.sleep(delay)
began = time.monotonic()
rc = lib.HcclCommInitRootInfo(ctypes.c_uint32(n_ranks), info, ctypes.c_uint32(rank), ctypes.byref(comm))
print(rc, round(time.monotonic() - began, 1), lib.atbOpsHcclCpuLastError().decode() if rc else "", flush=True)
time.sleep(linger)
"""


@pytest.mark.parametrize("linger", [0.0, 8.0])
def test_ranks_that_disagree_at_init_fail_at_once_with_the_reason_on_every_rank(user_env, tmp_path, linger):
    """Rank 2 of 3 passes nRanks 4, after ranks 0 and 1 met: every rank fails HcclCommInitRootInfo at once, rank 1
    too, which had read the root's record before rank 2 refused it (it waited out ATB_OPS_TIMEOUT blaming rank 0, or
    got "Connection reset by peer" once the root's process went): it gets the root's reason where the root's process
    stays, and where it exits at once either that reason or a message naming the root's lost store."""
    root_info = tmp_path / "root_info.bin"
    env = {**user_env, "ATB_OPS_TIMEOUT": "20"}
    exits = run_programs(lambda r: [sys.executable, "-c", _INIT_RANK, str(r), str(4 if r == 2 else 3), root_info,
                                    str(linger), "2" if r == 2 else "0"], 3, env, timeout_s=120)
    for rank, e in enumerate(exits):
        assert e.returncode == 0, f"rank {rank} exited {e.returncode}: {e.stdout}{e.stderr[-3000:]}"
        rc, seconds, why = e.last_line().split(" ", 2)
        assert float(seconds) < 10, (rank, e.stdout)  # not ATB_OPS_TIMEOUT's 20 s
        told = rc == str(HCCL_E_PARA) and "ranks disagree on the rankSize" in why
        lost_root = rc == str(HCCL_E_REMOTE) and "lost the store" in why and "root rank 0" in why
        assert told or (rank == 1 and linger == 0 and lost_root), (rank, e.stdout)


class _SendRecvItem(ctypes.Structure):
    """HcclSendRecvItem of hccl_types.h."""

    _fields_ = [("sendRecvType", ctypes.c_int), ("buf", ctypes.c_void_p), ("count", ctypes.c_uint64),
                ("dataType", ctypes.c_int), ("remoteRank", ctypes.c_uint32)]


def test_hccl_codes_where_hccl_checks_its_arguments(hccl):
    """HCCL's own codes: an in-place HcclAlltoAllV is HCCL_E_PARA (HcomCheckAlltoAllVExternalMem), an unknown data type
    or reduce op HCCL_E_NOT_SUPPORT, a HcclBatchSendRecv item neither send nor receive HCCL_E_PARA, HcclCommInitAll
    with null devices or comms HCCL_E_PTR and ndev 0 HCCL_E_PARA."""
    comm = _one_rank_comm(hccl)
    data = (ctypes.c_float * 4)(1, 2, 3, 4)
    counts = (ctypes.c_uint64 * 1)(4)
    displs = (ctypes.c_uint64 * 1)(0)
    try:
        assert hccl.HcclAlltoAllV(data, counts, displs, HCCL_FP32, data, counts, displs, HCCL_FP32, comm,
                                  None) == HCCL_E_PARA
        assert b"same buffer" in hccl.atbOpsHcclCpuLastError()
        out = (ctypes.c_float * 4)()
        assert hccl.HcclAllReduce(data, out, ctypes.c_uint64(4), 99, HCCL_SUM, comm, None) == HCCL_E_NOT_SUPPORT
        assert hccl.HcclAllReduce(data, out, ctypes.c_uint64(4), HCCL_FP32, 9, comm, None) == HCCL_E_NOT_SUPPORT
        item = _SendRecvItem(7, ctypes.cast(data, ctypes.c_void_p), 4, HCCL_FP32, 0)  # neither send (0) nor recv (1)
        assert hccl.HcclBatchSendRecv(ctypes.byref(item), ctypes.c_uint32(1), comm, None) == HCCL_E_PARA
        assert b"sendRecvType 7" in hccl.atbOpsHcclCpuLastError()
    finally:
        assert hccl.HcclCommDestroy(comm) == 0
    devices = (ctypes.c_int32 * 1)(0)
    comms = (ctypes.c_void_p * 1)()
    assert hccl.HcclCommInitAll(ctypes.c_uint32(1), None, comms) == HCCL_E_PTR
    assert hccl.HcclCommInitAll(ctypes.c_uint32(1), devices, None) == HCCL_E_PTR
    assert hccl.HcclCommInitAll(ctypes.c_uint32(0), devices, comms) == HCCL_E_PARA


_REDUCE_RANK = _SHARE_ROOT_INFO + """
root = int(sys.argv[2])
comm = ctypes.c_void_p()
assert lib.HcclCommInitRootInfo(ctypes.c_uint32(3), info, ctypes.c_uint32(rank), ctypes.byref(comm)) == 0
send = (ctypes.c_float * 4)(*[float(rank + 1)] * 4)
out = (ctypes.c_float * 4)(-1, -1, -1, -1)
rc = lib.HcclReduce(send, out, ctypes.c_uint64(4), 4, 0, ctypes.c_uint32(root), comm, None)
print(rc, list(out), lib.atbOpsHcclCpuLastError().decode() if rc else "", flush=True)
assert lib.HcclCommDestroy(comm) == 0
"""


def test_hccl_reduce_ranks_that_name_different_roots_all_fail(user_env, tmp_path):
    """HcclReduce where rank 2 names root 2 and ranks 0 and 1 root 0: every rank fails naming each rank's root, and no
    recvBuf is written (two ranks used to take the sum as roots, with HCCL_SUCCESS everywhere)."""
    exits = run_programs(lambda r: [sys.executable, "-c", _REDUCE_RANK, str(r), str(2 if r == 2 else 0),
                                    tmp_path / "root_info.bin"], 3, user_env, timeout_s=120)
    for rank, e in enumerate(exits):
        assert e.returncode == 0, f"rank {rank} exited {e.returncode}: {e.stdout}{e.stderr[-3000:]}"
        rc, rest = e.last_line().split(" ", 1)
        assert rc != "0" and "root differs" in rest and "rank 2: 2" in rest, (rank, e.stdout)
        assert rest.startswith("[-1.0, -1.0, -1.0, -1.0]"), (rank, e.stdout)
