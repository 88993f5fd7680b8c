"""scripts/run_atb_cpp_demos.py on a small tree shaped like ATB's example/op_demo (the demo here is written for
this test, in the style of ATB's: ranks forked by the program, a build.sh that compiles and runs it): a demo passes
only when every rank finished its Execute and nothing reported an error."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts/run_atb_cpp_demos.py"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")

# Two forked ranks gather 4 floats each; RANK_SIZE is 2, or 0 to make CreateOperation fail on every rank.
DEMO = textwrap.dedent("""
    #include <sys/wait.h>
    #include <unistd.h>
    #include <iostream>
    #include "../demo_util.h"

    int Rank(int rank) {
        aclInit(nullptr);
        aclrtSetDevice(rank);
        atb::Context *context = nullptr;
        aclrtStream stream = nullptr;
        CHECK_STATUS(atb::CreateContext(&context));
        CHECK_STATUS(aclrtCreateStream(&stream));
        context->SetExecuteStream(stream);
        atb::Tensor x, y;
        x.desc = {ACL_FLOAT, ACL_FORMAT_ND, {{4}, 1}};
        y.desc = {ACL_FLOAT, ACL_FORMAT_ND, {{2, 4}, 2}};
        x.dataSize = 16;
        y.dataSize = 32;
        CHECK_STATUS(aclrtMalloc(&x.deviceData, 16, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_STATUS(aclrtMalloc(&y.deviceData, 32, ACL_MEM_MALLOC_HUGE_FIRST));
        atb::infer::AllGatherParam param;
        param.rank = rank;
        param.rankSize = RANK_SIZE;
        atb::Operation *op = nullptr;
        CHECK_STATUS(atb::CreateOperation(param, &op));
        atb::VariantPack pack;
        pack.inTensors = {x};
        pack.outTensors = {y};
        uint64_t size = 0;
        CHECK_STATUS(op->Setup(pack, size, context));
        CHECK_STATUS(op->Execute(pack, nullptr, 0, context));
        std::cout << "rank " << rank << " done" << std::endl;
        return 0;
    }

    int main() {
        for (int i = 0; i < 2; ++i) {
            if (fork() == 0) return Rank(i);
        }
        for (int i = 0; i < 2; ++i) wait(nullptr);
        return 0;
    }
""")

UTIL = textwrap.dedent("""
    #include <iostream>
    #include "acl/acl.h"
    #include "atb/atb_infer.h"
    #define CHECK_STATUS(s) do { int st_ = (s); if (st_ != 0) { \\
        std::cout << __FILE__ << ":" << __LINE__ << " [ErrorCode]: " << st_ << std::endl; return st_; } } while (0)
""")

BUILD = 'g++ -I "${ATB_HOME_PATH}/include" -I "${ASCEND_HOME_PATH}/include" -L "${ATB_HOME_PATH}/lib" ' \
        '-L "${ASCEND_HOME_PATH}/lib64" all_gather_demo.cpp -l atb -l ascendcl -o all_gather_demo\n' \
        './all_gather_demo\n'


def _tree(root: Path, rank_size: int) -> Path:
    demo = root / "example/op_demo/all_gather"
    demo.mkdir(parents=True)
    (root / "example/op_demo/demo_util.h").write_text(UTIL)
    (demo / "all_gather_demo.cpp").write_text(DEMO.replace("RANK_SIZE", str(rank_size)))
    (demo / "build.sh").write_text(BUILD)
    return root


def _run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--atb-root", str(root), "--only", "all_gather",
                           "--timeout", "240"], capture_output=True, text=True, timeout=300)


def test_demo_whose_ranks_all_finish_passes(tmp_path):
    proc = _run(_tree(tmp_path, 2))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("PASS    all_gather"), proc.stdout
    assert "AllGatherOperation rank 0: Execute done" in proc.stdout
    assert "AllGatherOperation rank 1: Execute done" in proc.stdout


def test_demo_whose_ranks_fail_fails(tmp_path):
    proc = _run(_tree(tmp_path, 0))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("FAIL    all_gather"), proc.stdout
    assert "the demo printed an error code" in proc.stdout and "libatb.so logged an error" in proc.stdout
    assert "no rank finished an Execute" in proc.stdout


def test_a_rank_that_never_finished_is_named():
    spec = importlib.util.spec_from_file_location("run_atb_cpp_demos", SCRIPT)
    demos = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = demos  # dataclasses look their module up there
    spec.loader.exec_module(demos)
    line = "[atb_ops libatb] [INFO] [pid 1, tid 1] AllReduceOperation::Execute (rank {} of 3) done: ..."
    result = demos.judge("all_reduce", 0, "\n".join(line.format(r) for r in (0, 2)), 1.0)
    assert result.verdict == "FAIL" and "rank(s) [1] of 3 never finished" in result.reason, result
    assert demos.judge("all_reduce", 0, "\n".join(line.format(r) for r in range(3)), 1.0).verdict == "PASS"
    assert demos.judge("all_reduce", None, "", 1.0).verdict == "TIMEOUT"


def test_refuses_a_tree_inside_the_repository():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--atb-root", str(REPO_ROOT)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no example/op_demo" in proc.stderr, proc.stderr
