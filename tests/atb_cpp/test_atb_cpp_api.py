"""ATB's C++ API on CPU ranks, as ATB programs use it: the programs in tests/native/atb_api are built with ATB's own
demo build line after `eval "$(python -m atb_ops env)"` (nothing but the installed headers and -latb -lascendcl
-lhccl -lpthread: no torch headers, no rpath) and run as rank processes (separate launches, and forked before any
ACL call as ATB's demos do), as rank threads (commMode 1), and over a communicator the program made itself
(HcclCommInitRootInfo / HcclCommInitAll). Each rank checks every result against goldens it computes on the host
and prints its verdict; every exit status is checked here. atb_bad_inputs checks ATB's Status codes for bad input
(null or host memory as deviceData, wrong dtypes, sizes and counts, destroyed contexts and operations)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from atb_ops.emulation import atb_home
from tests.support.launch import run_programs
from tests.support.paths import REPO_ROOT

PROGRAMS = REPO_ROOT / "tests/native/atb_api"
ASCEND_HOME = atb_home.packaged_ascend_home()

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ (ATB's build line uses it)")

# ATB's demo build line (example/op_demo/*/build.sh), with -lhccl for the programs that make their own communicator.
BUILD_LINE = ('g++ -I"$ATB_HOME_PATH/include" -I"$ASCEND_HOME_PATH/include" -L"$ATB_HOME_PATH/lib" '
              '-L"$ASCEND_HOME_PATH/lib64" "$SOURCE" -latb -lascendcl -lhccl -lpthread -o "$TARGET"')


def _shell(command: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`command` in bash after `eval "$(python -m atb_ops env)"`, as a user's shell runs it."""
    script = f'eval "$("{sys.executable}" -m atb_ops env)" && {command}'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=timeout)


def _env(**extra: str) -> dict[str, str]:
    """A clean user environment: no emulation variables inherited from the test run, a job id of its own (the
    rendezvous scope of its ranks) and a finite timeout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ATB_HOME_PATH", "ASCEND_HOME_PATH", "LD_LIBRARY_PATH", "ATB_OPS_JOB_ID")}
    env.update(ATB_OPS_JOB_ID=uuid.uuid4().hex, ATB_OPS_TIMEOUT="60", **extra)
    return env


def _build(tmp_path_factory, name: str) -> Path:
    target = tmp_path_factory.mktemp(name) / name
    proc = _shell(BUILD_LINE, {**_env(), "SOURCE": str(PROGRAMS / f"{name}.cpp"), "TARGET": str(target)}, 300)
    assert proc.returncode == 0, f"ATB's build line failed for {name}:\n{proc.stderr[-4000:]}"
    return target


@pytest.fixture(scope="module")
def collectives(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "atb_collectives")


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "atb_bad_inputs")


def _run(exe: Path, args: list[str], env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess:
    return _shell(" ".join([f'"{exe}"', *args]), env, timeout)


def _assert_every_rank_ok(output: str, world_size: int) -> None:
    ranks = sorted(int(m) for m in re.findall(r"^rank (\d+): ok, \d+ checks$", output, re.MULTILINE))
    assert ranks == list(range(world_size)), output


def test_build_line_needs_nothing_else(tmp_path):
    """ATB's line builds a program without torch's headers or an rpath, and the loader finds libatb.so's own
    dependencies (torch, atb_ops' core, libhccl.so, libascendcl.so) through its RUNPATH."""
    exe = tmp_path / "tiny"
    source = tmp_path / "tiny.cpp"
    source.write_text('#include <atb/atb_infer.h>\n#include <cstdio>\n'
                      'int main() { atb::Context* c = nullptr; int st = atb::CreateContext(&c);'
                      ' std::printf("%d %s\\n", st + atb::DestroyContext(c), atb::Utils::GetAtbVersion().c_str()); }\n')
    proc = _shell(BUILD_LINE, {**_env(), "SOURCE": str(source), "TARGET": str(exe)}, 300)
    assert proc.returncode == 0, proc.stderr
    run = _shell(f'"{exe}"', _env(), 60)
    assert run.returncode == 0 and run.stdout.startswith("0 atb_ops "), run.stdout + run.stderr
    libatb = Path(atb_home.packaged_atb_home()) / "lib" / "libatb.so"
    dynamic = subprocess.run(["readelf", "-d", str(libatb)], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))
    assert {"libatb_ops.so", "libhccl.so", "libascendcl.so", "libtorch_cpu.so", "libc10.so"} <= needed, needed
    runpath = re.search(r"\(RUNPATH\)\s+Library runpath: \[(.+?)\]", dynamic).group(1).split(":")
    assert "$ORIGIN/../../lib" in runpath and "$ORIGIN/../../ascend_home/lib64" in runpath, runpath
    assert any(p.endswith("/torch/lib") for p in runpath), runpath


@pytest.mark.parametrize("world_size", [2, 3])
def test_rank_processes_launched_separately(collectives, world_size):
    env = {**_env(), **_user_paths()}
    exits = run_programs(lambda r: [collectives, "proc", str(r), str(world_size)], world_size, env, timeout_s=240)
    for rank, e in enumerate(exits):
        assert e.returncode == 0, f"rank {rank} exited {e.returncode}: {e.stdout}{e.stderr[-3000:]}"
        assert e.stdout.strip() == f"rank {rank}: ok, {_checks(e.stdout)} checks", e.stdout


@pytest.mark.parametrize("world_size", [2, 4])
def test_ranks_forked_before_any_acl_call(collectives, world_size):
    """ATB's demos fork their ranks first; the program waits for each child and checks its exit status."""
    proc = _run(collectives, ["fork", str(world_size)], _env())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    _assert_every_rank_ok(proc.stdout, world_size)
    assert proc.stdout.count("exited 0") == world_size, proc.stdout


@pytest.mark.parametrize("world_size", [2, 4])
def test_rank_threads_comm_mode_1(collectives, world_size):
    proc = _run(collectives, ["threads", str(world_size)], _env())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    _assert_every_rank_ok(proc.stdout, world_size)


def test_callers_hccl_comm_in_processes(collectives, tmp_path):
    """param.hcclComm from the program's own HcclCommInitRootInfo: used as given, left alive (the program checks
    it, then destroys it itself)."""
    env = {**_env(), **_user_paths()}
    root = tmp_path / "root_info"
    exits = run_programs(lambda r: [collectives, "hccl-proc", str(r), "2", root], 2, env, timeout_s=240)
    for rank, e in enumerate(exits):
        assert e.returncode == 0, f"rank {rank} exited {e.returncode}: {e.stdout}{e.stderr[-3000:]}"
        _assert_every_rank_ok(e.stdout.replace(f"rank {rank}:", "rank 0:"), 1)


def test_callers_hccl_comms_in_threads(collectives):
    proc = _run(collectives, ["hccl-threads", "3"], _env())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    _assert_every_rank_ok(proc.stdout, 3)


@pytest.mark.parametrize("mode", ["fork", "threads"])
def test_disagreeing_layout_is_an_error_on_every_rank(collectives, mode):
    """The programs' last step sends a layout rank 1 disagrees with: each rank's Execute returned
    ERROR_INVALID_PARAM (checked in the program) and logged why, naming both counts. The message comes from
    HcclAlltoAllV: backend "hccl" in libatb.so runs the HCCL backend over libhccl.so, in processes and threads."""
    proc = _run(collectives, [mode, "2"], _env())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    lines = [line for line in proc.stderr.splitlines() if "AllToAllVV2Operation::Execute" in line]
    assert len(lines) == 2, proc.stderr
    for line in lines:
        assert "ERROR_INVALID_PARAM: HcclAlltoAllV returned 1 (HCCL_E_PARA" in line and "count mismatch" in line, line


def test_bad_inputs_return_atb_codes(bad_inputs):
    proc = _run(bad_inputs, [], _env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert re.fullmatch(r"bad inputs: ok, \d+ checks\n", proc.stdout), proc.stdout
    err = proc.stderr
    # Every refusal is logged with ATB's error name, the operator and the value.
    assert "ERROR_INVALID_TENSOR_ADDR: AllGatherOperation inTensors[0].deviceData" in err
    assert "TransdataOperation is not emulated" in err and "ELEWISE_MULS) is not emulated" in err
    linear = err.split("--- LinearParallelParam follows")[1].split("--- LinearParallelParam done")[0]
    assert "ERROR_INVALID_PARAM" in linear and "LinearParallelOperation" in linear and "9" in linear, linear
    # Utils::SetLogLevel(NONE) silenced the library.
    assert "[atb_ops libatb]" not in err.split("--- silenced")[1], err


@pytest.mark.parametrize(("variables", "logged"), [
    ({}, True),
    ({"ASCEND_GLOBAL_LOG_LEVEL": "4"}, False),
    ({"ASCEND_MODULE_LOG_LEVEL": "OP=4", "ASCEND_GLOBAL_LOG_LEVEL": "0"}, False),
    ({"ASDOPS_LOG_LEVEL": "FATAL"}, False),
])
def test_log_level_from_the_environment(bad_inputs, variables, logged):
    proc = _run(bad_inputs, [], _env(**variables), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert ("[atb_ops libatb] [ERROR]" in proc.stderr) == logged, proc.stderr[-2000:]


def test_info_level_reports_each_ranks_execute(collectives):
    proc = _run(collectives, ["threads", "2"], _env(ASCEND_GLOBAL_LOG_LEVEL="1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    for rank in range(2):
        assert "[INFO]" in proc.stderr and f"AllGatherOperation::Execute (rank {rank} of 2) done" in proc.stderr


def _checks(out: str) -> str:
    m = re.search(r"ok, (\d+) checks", out)
    return m.group(1) if m else "?"


def _user_paths() -> dict[str, str]:
    """What `python -m atb_ops env` exports, for processes started without a shell."""
    proc = subprocess.run([sys.executable, "-m", "atb_ops", "env"], capture_output=True, text=True, check=True)
    return dict(re.findall(r"^export (\w+)=(.*)$", proc.stdout, re.MULTILINE))


def test_readme_example(tmp_path):
    """README's "ATB C++ programs" example, built with the build line it shows and run."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## ATB C++ programs", 1)[1]
    source = tmp_path / "allgather.cpp"
    source.write_text(section.split("```cpp\n", 1)[1].split("```", 1)[0])
    exe = tmp_path / "allgather"
    proc = _shell(BUILD_LINE, {**_env(), "SOURCE": str(source), "TARGET": str(exe)}, 300)
    assert proc.returncode == 0, proc.stderr
    run = _shell(f'"{exe}"', _env(), 120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.splitlines()) == [f"rank {r}: 0 1 2 3 | 10 11 12 13" for r in range(2)], run.stdout


def test_old_cxx_abi_is_stopped_at_compile_time(tmp_path):
    """libatb.so takes params holding std::string in torch's ABI: a program built with the old ABI would hand over
    strings of another layout, so atb/types.h stops the build (ATB's build.sh passes torch's ABI, 1)."""
    source = tmp_path / "old_abi.cpp"
    source.write_text("#include <atb/atb_infer.h>\nint main() { return 0; }\n")
    proc = _shell(f'g++ -D_GLIBCXX_USE_CXX11_ABI=0 -I"$ATB_HOME_PATH/include" -I"$ASCEND_HOME_PATH/include" '
                  f'-c "{source}" -o "{tmp_path}/old_abi.o"', _env(), 120)
    assert proc.returncode != 0 and "_GLIBCXX_USE_CXX11_ABI=1" in proc.stderr, proc.stderr
