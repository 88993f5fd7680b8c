"""Runs ATB's own communication-operator tests, unchanged, under ``python -m atb_ops run``.

ATB's tests (public repository hicann/ascend-transformer-boost) start their ranks with multiprocessing and
never look at the children's exit status, so an assertion failing in a rank still reports OK. This script
runs each file from its own folder, as ``python -m unittest`` would, records every child process the file
starts, and fails the file unless unittest succeeded *and* every child exited 0.

Usage::

    git clone --depth 1 https://github.com/hicann/ascend-transformer-boost /tmp/atb   # outside this repo
    python scripts/run_atb_tests.py --atb-root /tmp/atb                  # every communication test
    python scripts/run_atb_tests.py --atb-root /tmp/atb --only all_reduce broadcast
    python scripts/run_atb_tests.py --atb-root /tmp/atb --generalized    # + reduce_scatterv's long one

Prints one line per file (verdict, children, seconds) and a summary. Verdicts: PASS (it ran tests, not all
skipped, started ranks, and every rank exited 0), FAIL, TIMEOUT, VACUOUS (it returned without starting a rank,
or ran no test, or only skipped ones: it tested nothing, which ATB's files do silently, e.g. "hccl_runner is not
compiled, skip") and NOT RUN HERE (vacuous for a reason named in NOT_RUNNABLE_HERE). Exit status 1 unless every
file is PASS or NOT RUN HERE.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OPS_DIR = Path("tests/apitest/opstest/python/operations")
TORCH_ATB_DIR = Path("tests/apitest")
COMM_OPS = ["all_gather", "all_gatherv", "all_reduce", "all_to_all", "all_to_allv", "all_to_allvv2", "broadcast",
            "reduce_scatter", "reduce_scatterv", "send", "recv", "linear_parallel"]
# ATB names its LinearParallelOperation tests linear_parallel_*.py (linear_parallel_moe_common.py is a helper).
FILE_PATTERNS = {"linear_parallel": "linear_parallel_*.py"}
HELPERS = ("_common.py",)
TORCH_ATB_TESTS = ["all_gather_test.py", "all_to_all_test.py", "multirank_multistream_test.py",
                   "matmul_allreduce_pertoken_test.py"]
GENERALIZED = "generalized"  # reduce_scatterv's 8-rank file with hundreds of cases (and a space in its name)
RESULT_TAG = "ATB_OPS_CHILD_RESULT "
# Files that start no rank on one CPU host for a reason of their own: (a substring of the name, why).
NOT_RUNNABLE_HERE = [
    ("multi_server", "needs several hosts (ATB runs it on a cluster of servers)"),
    ("test_all_to_all_operation_lccl.py", "an Atlas A3 test: it returns unless the device name is Ascend910_93*; "
                                          "run it with ATB_OPS_NPU_NAME=Ascend910_9391"),
]


@dataclass
class TestFile:
    """One ATB test file and how unittest is pointed at it."""

    name: str
    cwd: Path
    unittest_args: list[str]
    # Folders put on PYTHONPATH. ATB runs its operator tests in one unittest process (discover -s operations
    # -t .) where earlier modules have already put operations/ on sys.path; a file run alone gets it from here
    # (linear_parallel_matmul_allreduce.py imports precision_calcu before appending that folder itself).
    python_path: tuple[Path, ...] = ()


def discover(root: Path, only: list[str] | None, generalized: bool) -> list[TestFile]:
    """The communication test files of an ATB checkout, in a stable order.

    Args:
        root: the checkout (it must hold tests/apitest).
        only: operator folder names (and/or "torch_atb") to keep; None keeps all.
        generalized: also run files whose name contains "generalized" (long).

    Returns:
        The files to run.

    Raises:
        FileNotFoundError: when root holds no ATB test tree.
    """
    ops = root / OPS_DIR
    if not ops.is_dir():
        raise FileNotFoundError(f"--atb-root {root}: no {OPS_DIR} in it; expected a checkout of "
                                "hicann/ascend-transformer-boost")
    files: list[TestFile] = []
    for op in COMM_OPS:
        if only and op not in only:
            continue
        for path in sorted((ops / op).glob(FILE_PATTERNS.get(op, "test_*.py"))):
            if (GENERALIZED in path.name and not generalized) or path.name.endswith(HELPERS):
                continue
            files.append(TestFile(f"{op}/{path.name}", path.parent, [path.name], (ops,)))
    if not only or "torch_atb" in only:
        # As ATB's own build script runs them: discovery from tests/apitest, one pattern at a time.
        for pattern in TORCH_ATB_TESTS:
            if list((root / TORCH_ATB_DIR).rglob(pattern)):
                files.append(TestFile(f"torch_atb/{pattern}", root / TORCH_ATB_DIR,
                                      ["discover", "-s", ".", "-p", pattern]))
    return files


def run_file(test: TestFile, device: str, timeout: float) -> dict:
    """Runs one file under the launcher, this script acting as the unittest driver in that process.

    Returns:
        {"name", "verdict" (PASS/FAIL/TIMEOUT), "children" (exit codes), "tests_run", "skipped", "seconds",
        "tail" (the last lines of output when it did not pass)}.
    """
    command = [sys.executable, "-m", "atb_ops", "run", "--device", device, str(Path(__file__).resolve()),
               "--as-unittest", *test.unittest_args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*filter(None, [env.get("PYTHONPATH")]), *map(str, test.python_path)])
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=test.cwd, capture_output=True, text=True, timeout=timeout, check=False,
                              env=env)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return {"name": test.name, "verdict": "TIMEOUT", "children": [], "tests_run": 0, "skipped": 0,
                "seconds": round(time.monotonic() - start, 1), "tail": out[-2000:]}
    output = proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_TAG)]
    report = json.loads(lines[-1][len(RESULT_TAG):]) if lines else {"children": [], "tests_run": 0, "skipped": 0}
    passed = proc.returncode == 0 and bool(lines) and all(c == 0 for c in report["children"])
    verdict = "PASS" if passed else "FAIL"
    if passed and (not report["children"] or report["tests_run"] == report["skipped"]):
        reason = next((why for part, why in NOT_RUNNABLE_HERE if part in test.name), None)
        verdict = "NOT RUN HERE" if reason else "VACUOUS"
        output = reason or output
    return {"name": test.name, "verdict": verdict, **report, "seconds": round(time.monotonic() - start, 1),
            "tail": "" if verdict == "PASS" else output[-2000:]}


def as_unittest(argv: list[str]) -> int:
    """The driver inside the launcher: `python -m unittest ARGV`, then every started child's exit status."""
    import multiprocessing.process as mp_process
    import unittest

    started = []
    original_start = mp_process.BaseProcess.start

    def recording_start(self):
        original_start(self)
        started.append(self)

    mp_process.BaseProcess.start = recording_start
    sys.path.insert(0, os.getcwd())
    result = unittest.main(module=None, argv=["unittest", *argv], exit=False).result
    codes = []
    for child in started:
        child.join(timeout=600)
        codes.append(child.exitcode)
    report = {"children": codes, "tests_run": result.testsRun, "skipped": len(result.skipped)}
    print(RESULT_TAG + json.dumps(report), flush=True)
    return 0 if result.wasSuccessful() and all(c == 0 for c in codes) else 1


def main(argv: list[str] | None = None) -> int:
    """Command line entry; see the module docstring."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--as-unittest"]:
        return as_unittest(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--atb-root", type=Path, required=True, help="a checkout of hicann/ascend-transformer-boost")
    parser.add_argument("--only", nargs="+", metavar="OP",
                        help=f"operator folders ({', '.join(COMM_OPS)}) or torch_atb")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="the launcher's --device")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per file (default 600)")
    parser.add_argument("--generalized", action="store_true", help="also the long *generalized* files")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    root = args.atb_root.resolve()
    if root == REPO or REPO in root.parents:
        parser.error(f"--atb-root {root} is inside this repository; ATB's tests are run from a copy outside it")
    results = []
    for test in discover(root, args.only, args.generalized):
        res = run_file(test, args.device, args.timeout)
        results.append(res)
        children = res["children"]
        print(f"{res['verdict']:12} {res['name']:60} children {sum(c == 0 for c in children)}/{len(children)} exit 0, "
              f"tests {res['tests_run']} (skipped {res['skipped']}), {res['seconds']} s", flush=True)
        if res["tail"]:
            lines = res["tail"].strip().splitlines()
            errors = [ln for ln in lines if "Error" in ln]  # a child's exception says more than unittest's "OK"
            print("        " + (errors or lines)[-1][:300], flush=True)
    verdicts = ("PASS", "FAIL", "TIMEOUT", "VACUOUS", "NOT RUN HERE")
    counts = {v: sum(r["verdict"] == v for r in results) for v in verdicts}
    print(f"{counts['PASS']}/{len(results)} files passed; " + ", ".join(f"{n} {v}" for v, n in counts.items()
                                                                         if v != "PASS" and n))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if counts["PASS"] + counts["NOT RUN HERE"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
