"""scripts/run_atb_tests.py on a small tree shaped like ATB's: a file passes only when unittest succeeds
and every child process it starts exits 0 (ATB's tests never check their children)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT


def load_runner():
    """scripts/run_atb_tests.py as a module (scripts/ is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_atb_tests", REPO_ROOT / "scripts/run_atb_tests.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


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
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts/run_atb_tests.py"), "--atb-root", str(atb_tree),
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
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts/run_atb_tests.py"), "--atb-root", str(atb_tree),
                           "--only", "all_reduce", "send", "--timeout", "240"],
                          capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert proc.returncode == 1 and "0/2 files passed; 1 VACUOUS, 1 NOT RUN HERE" in proc.stdout, proc.stdout


def test_refuses_a_tree_inside_the_repository():
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts/run_atb_tests.py"), "--atb-root", str(REPO_ROOT)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "inside this repository" in proc.stderr


def test_discovers_linear_parallel_files_but_not_their_helper(tmp_path):
    """ATB names its LinearParallelOperation tests linear_parallel_*.py; its *_common.py helper is no test."""
    module = load_runner()
    folder = tmp_path / "tests/apitest/opstest/python/operations/linear_parallel"
    folder.mkdir(parents=True)
    for name in ("linear_parallel_w8a8_test.py", "linear_parallel_moe_common.py", "helper.py"):
        (folder / name).write_text("")
    names = [t.name for t in module.discover(tmp_path, ["linear_parallel"], generalized=False)]
    assert names == ["linear_parallel/linear_parallel_w8a8_test.py"]


def test_a_fix_replaces_each_expected_text_or_fails_naming_itself():
    runner = load_runner()
    swap = runner.Fix("swap-args", "op/test_x.py", "the two flags are swapped",
                      (("f(True)", "f(False)"), ("f(False)", "f(True)")))
    # The pairs of one fix are found first, then replaced together: two values can swap.
    assert runner.apply_fix("a = f(True)\nb = f(False)\n", swap) == "a = f(False)\nb = f(True)\n"
    for text, found in (("a = f(True)\n", 0), ("f(True) f(True) f(False)", 2)):
        with pytest.raises(runner.FixDoesNotApply) as e:
            runner.apply_fix(text, swap)
        message = str(e.value)
        assert "fix 'swap-args' for op/test_x.py" in message and f"found it {found} times" in message
        assert "ATB's file has changed" in message and "the two flags are swapped" in message
    overlapping = runner.Fix("overlap", "op/test_x.py", "", (("abc", "x"), ("bcd", "y")))
    with pytest.raises(runner.FixDoesNotApply, match="overlap"):
        runner.apply_fix("abcd", overlapping)


def test_the_published_fixes_are_well_formed():
    """CI has no ATB checkout: the table is checked for shape here (names unique per file, every edit changes
    something, every file one the runner discovers); --check-fixes checks it against a checkout."""
    runner = load_runner()
    assert runner.FIXES
    pairs = [(f.name, f.file) for f in runner.FIXES]
    assert len(pairs) == len(set(pairs))
    for fix in runner.FIXES:
        assert fix.name and fix.name == fix.name.lower() and " " not in fix.name, fix.name
        assert fix.defect and fix.edits and all(old and old != new for old, new in fix.edits), fix.name
        op, name = fix.file.split("/")
        assert op in runner.COMM_OPS and Path(name).match(runner.FILE_PATTERNS.get(op, "test_*.py")), fix.file


# The fake file's child fails unless its fix turned "rank < 0" into "rank >= 0".
NEEDS_A_FIX = TEST_TEMPLATE.format(result="rank < 0")
FAKE_FIX = ("make-ranks-pass", "all_gather/test_needs_a_fix.py", "the fake file asserts rank < 0",
            (("assert rank < 0", "assert rank >= 0"),))


@pytest.fixture
def tree_needing_a_fix(tmp_path) -> Path:
    root = tmp_path / "atb"
    folder = root / "tests/apitest/opstest/python/operations/all_gather"
    folder.mkdir(parents=True)
    (folder / "test_needs_a_fix.py").write_text(NEEDS_A_FIX)
    return root


def run_main(runner, argv, monkeypatch, capsys, fixes):
    monkeypatch.setattr(runner, "FIXES", fixes)
    code = runner.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_with_fixes_runs_a_fixed_copy_and_names_the_fix(tree_needing_a_fix, tmp_path, monkeypatch, capsys):
    runner = load_runner()
    published = tree_needing_a_fix / "tests/apitest/opstest/python/operations/all_gather/test_needs_a_fix.py"
    fixes = [runner.Fix(*FAKE_FIX)]
    argv = ["--atb-root", str(tree_needing_a_fix), "--timeout", "240", "--json", str(tmp_path / "r.json")]
    # Without the flag the file runs as published: its children fail.
    code, out, _ = run_main(runner, argv, monkeypatch, capsys, fixes)
    assert code == 1 and "FAIL " in out and "fixes" not in out, out
    assert json.loads((tmp_path / "r.json").read_text())[0]["fixes"] == []
    code, out, _ = run_main(runner, [*argv, "--with-fixes"], monkeypatch, capsys, fixes)
    assert code == 0, out
    assert "fix make-ranks-pass (all_gather/test_needs_a_fix.py): the fake file asserts rank < 0" in out
    assert "PASS (fixes: make-ranks-pass) all_gather/test_needs_a_fix.py" in out and "1/1 files passed" in out, out
    result = json.loads((tmp_path / "r.json").read_text())[0]
    assert result["fixes"] == ["make-ranks-pass"] and result["children"] == [0, 0]
    assert published.read_text() == NEEDS_A_FIX  # the checkout is untouched
    # Fixes of folders not selected are not looked at.
    code, out, _ = run_main(runner, [*argv, "--with-fixes", "--only", "broadcast"], monkeypatch, capsys, fixes)
    assert "fixes" not in out and "0/0 files passed" in out, out


def test_a_fix_that_no_longer_applies_stops_the_run_before_anything_runs(tree_needing_a_fix, monkeypatch, capsys):
    runner = load_runner()
    argv = ["--atb-root", str(tree_needing_a_fix), "--with-fixes"]
    stale = runner.Fix("make-ranks-pass", FAKE_FIX[1], FAKE_FIX[2], (("assert rank < 1", "assert rank >= 0"),))
    code, out, err = run_main(runner, argv, monkeypatch, capsys, [stale])
    assert code == 2 and "files passed" not in out, out
    assert "--with-fixes: fix 'make-ranks-pass' for all_gather/test_needs_a_fix.py: expected 'assert rank < 1' " \
           "once in the file, found it 0 times" in err, err
    gone = runner.Fix("renamed", "all_gather/test_gone.py", "a file ATB removed", (("a", "b"),))
    code, out, err = run_main(runner, argv, monkeypatch, capsys, [runner.Fix(*FAKE_FIX), gone])
    assert code == 2 and "fix 'renamed'" in err and "test_gone.py is not in the checkout" in err, err
    code, out, err = run_main(runner, [*argv[:2], "--check-fixes"], monkeypatch, capsys, [stale])
    assert code == 2 and "found it 0 times" in err, err
    code, out, err = run_main(runner, [*argv[:2], "--check-fixes"], monkeypatch, capsys, [runner.Fix(*FAKE_FIX)])
    assert code == 0 and "1 fix applies to 1 file" in out, out
