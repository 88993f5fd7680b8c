"""scripts/run_atb_tests.py on a small tree shaped like ATB's: a file passes only when unittest succeeds
and every child process it starts exits 0 (ATB's tests never check their children)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# A unittest file in ATB's style (written here): ranks in multiprocessing children, the assertion inside the
# child, the parent joining without looking at exit codes. RESULT decides what the child asserts.
TEST_TEMPLATE = textwrap.dedent('''
    import unittest
    from multiprocessing import Process, set_start_method

    import torch
    import torch_npu  # the emulation's, under the launcher

    def worker(rank):
        x = torch.ones(3).npu() * (rank + 1)
        assert {result} and x.sum().item() == 3 * (rank + 1)

    class T(unittest.TestCase):
        def test_ranks(self):
            set_start_method("spawn", force=True)
            ps = [Process(target=worker, args=(r,)) for r in range(2)]
            for p in ps:
                p.start()
            for p in ps:
                p.join()

    if __name__ == "__main__":
        unittest.main()
''')


# ATB files that test nothing here, as real ones do: return before starting a rank, or skip every test.
RETURNS_EARLY = textwrap.dedent('''
    import unittest

    class T(unittest.TestCase):
        def test_ranks(self):
            print("hccl_runner is not compiled, skip")
            return

    if __name__ == "__main__":
        unittest.main()
''')
SKIPS_ALL = textwrap.dedent('''
    import unittest

    class T(unittest.TestCase):
        @unittest.skip("only supports Ascend910B")
        def test_ranks(self):
            pass

    if __name__ == "__main__":
        unittest.main()
''')


@pytest.fixture(scope="module")
def atb_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("atb")
    ops = root / "tests/apitest/opstest/python/operations"
    files = [("all_gather", "test_good.py", TEST_TEMPLATE.format(result="True")),
             ("broadcast", "test_bad_child.py", TEST_TEMPLATE.format(result="False")),
             ("all_reduce", "test_returns_early.py", RETURNS_EARLY),
             ("all_to_all", "test_skips_all.py", SKIPS_ALL),
             ("send", "test_send_multi_server.py", RETURNS_EARLY)]
    for folder, name, text in files:
        (ops / folder).mkdir(parents=True, exist_ok=True)
        (ops / folder / name).write_text(text)
    return root


def test_children_decide_the_verdict(atb_tree, tmp_path):
    report = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts/run_atb_tests.py"), "--atb-root", str(atb_tree),
                           "--json", str(report), "--timeout", "240"],
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = {r["name"]: r for r in json.loads(report.read_text())}
    good, bad = results["all_gather/test_good.py"], results["broadcast/test_bad_child.py"]
    assert good["verdict"] == "PASS" and good["children"] == [0, 0] and good["tests_run"] == 1
    # unittest itself said OK here; only the children's exit status shows the failure.
    assert bad["verdict"] == "FAIL" and bad["children"] == [1, 1] and bad["tests_run"] == 1
    # Files that tested nothing are not passes: VACUOUS (a failure) unless named with a reason.
    assert results["all_reduce/test_returns_early.py"]["verdict"] == "VACUOUS"
    assert results["all_to_all/test_skips_all.py"]["verdict"] == "VACUOUS"
    assert results["send/test_send_multi_server.py"]["verdict"] == "NOT RUN HERE"
    assert "1/5 files passed; 1 FAIL, 2 VACUOUS, 1 NOT RUN HERE" in proc.stdout, proc.stdout


def test_vacuous_files_alone_fail_the_run(atb_tree, tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "scripts/run_atb_tests.py"), "--atb-root", str(atb_tree),
                           "--only", "all_reduce", "send", "--timeout", "240"],
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert proc.returncode == 1 and "0/2 files passed; 1 VACUOUS, 1 NOT RUN HERE" in proc.stdout, proc.stdout


def test_refuses_a_tree_inside_the_repository():
    proc = subprocess.run([sys.executable, str(REPO / "scripts/run_atb_tests.py"), "--atb-root", str(REPO)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "inside this repository" in proc.stderr


def test_discovers_linear_parallel_files_but_not_their_helper(tmp_path):
    """ATB names its LinearParallelOperation tests linear_parallel_*.py; its *_common.py helper is no test."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_atb_tests", REPO / "scripts/run_atb_tests.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    folder = tmp_path / "tests/apitest/opstest/python/operations/linear_parallel"
    folder.mkdir(parents=True)
    for name in ("linear_parallel_w8a8_test.py", "linear_parallel_moe_common.py", "helper.py"):
        (folder / name).write_text("")
    names = [t.name for t in module.discover(tmp_path, ["linear_parallel"], generalized=False)]
    assert names == ["linear_parallel/linear_parallel_w8a8_test.py"]
