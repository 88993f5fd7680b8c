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
    python scripts/run_atb_tests.py --atb-root /tmp/atb --with-fixes --only linear_parallel send

Prints one line per file (verdict, children, seconds) and a summary. Verdicts: PASS (it ran tests, not all
skipped, started ranks, and every rank exited 0), FAIL, TIMEOUT, VACUOUS (it returned without starting a rank,
or ran no test, or only skipped ones: it tested nothing, which ATB's files do silently, e.g. "hccl_runner is not
compiled, skip") and NOT RUN HERE (vacuous for a reason named in NOT_RUNNABLE_HERE). Exit status 1 unless every
file is PASS or NOT RUN HERE.

``--with-fixes`` runs a few of ATB's files with documented fixes (FIXES below) for faults in the files
themselves, so that ATB's own assertions run where the file as published cannot pass on an NPU either (swapped
transWeight arguments, a worker called without an argument, a send to a rank that does not exist, cases ATB's own
checks refuse) or cannot fit this host (w8a8's largest sizes on 8 ranks, 700 random MoE cases). Each fix is a
named textual substitution; it is applied to a copy of ATB's python test tree in a temporary folder, never to
the checkout and never to anything in this repository, and each expected text must occur exactly once in the
published file: when it does not (ATB changed the file), the run stops at once (exit status 2) naming the fix.
The fixes applied to a file are named in its line, e.g. ``PASS (fixes: swap-transweight-args)``. Without the flag
every file runs exactly as published. ``--check-fixes`` only checks that every fix still applies, running nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
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
    # Not the hosts: atb_ops spans emulated hosts. As published, each of these test methods returns at its first
    # line, and its body starts one node's half of the ranks (two of them name rank tables on ATB's own servers).
    ("multi_server", "its test returns at its first line as published (ATB switched its several-server case off)"),
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
    fixes: tuple[str, ...] = ()  # the names of the FIXES applied to the copy that runs (--with-fixes)


@dataclass(frozen=True)
class Fix:
    """A documented fix for a fault in one of ATB's test files, applied only with --with-fixes.

    Each (expected, replacement) pair replaces text that must occur exactly once in the file as this fix
    finds it; the pairs of one fix are found first, then replaced together (so two of them may swap values).
    """

    name: str  # shown in the file's output line
    file: str  # "<operator folder>/<file name>", as TestFile.name
    defect: str  # what is wrong in the published file and why it cannot pass as it is
    edits: tuple[tuple[str, str], ...]


class FixDoesNotApply(RuntimeError):
    """The text a fix expects is not (or not exactly once) in ATB's file: the file changed; check the fix."""


# The random MoE files draw 700 cases each, of 2-8 ranks (hours on 2 cores); these many run with --with-fixes
# (with seed 0, 1-3 minutes a file here, their quantised tests included).
MOE_RANDOM_CASES = 4
RANDOM_SEED = 0
_LP = "linear_parallel/"
FIXES: list[Fix] = [
    Fix("swap-transweight-args", _LP + "linear_parallel_operation_test.py",
        "its three tests pass transWeight the wrong way round: the plain and the bias test lay their weights out "
        "[k, n] but pass True, the transB test lays them out [n, k] but passes False; ATB's setup refuses the "
        "shapes (x's k is not the weight's k; MatmulInTensorDescsCheck) and the file's own golden matmul raises",
        (('args=(world_size, True, d_types, sizes, "None")', 'args=(world_size, False, d_types, sizes, "None")'),
         ('args=(world_size, False, d_types, sizes, "None")', 'args=(world_size, True, d_types, sizes, "None")'),
         ('args=(world_size, True, d_types, sizes, "yes")', 'args=(world_size, False, d_types, sizes, "yes")'))),
    Fix("bias-as-residual", _LP + "linear_parallel_operation_test.py",
        "its param keys bias and parallelType belong to no LinearParallelParam of today (ATB's test framework "
        "ignores them), so its bias test hands 3 tensors to an operation that takes 2 (hasResidual false); its golden "
        "adds the bias once after the all-reduce, which is what ATB's residual is: the bias goes in as the residual",
        (('"bias": bias, "parallelType": "RowParallel",', '"hasResidual": bias != "None",'),)),
    Fix("w8a8-drop-two-largest-sizes", _LP + "linear_parallel_w8a8_test.py",
        "not a fault: its 8 ranks at [32768, 3904] x [3904, 12288] and [16384, 12288] x [12288, 7808] need ~50 GB "
        "of host memory (an NPU server has it, this 24 GB host does not); the other eight sizes run",
        (("[[32768,3904],[3904,12288]],", ""), ("[[16384,12288],[12288,7808]],", ""))),
    Fix("pass-worker-outputsize", _LP + "linear_parallel_test_moe_matmul_alltoallv.py",
        "its random test calls main_worker without the last argument (outpusize): a TypeError in every rank; it "
        "passes M*2, the maxOutputSize it gave MoeTestDate on the line before",
        (("matrix_c_list, matrix_c_low_list))", "matrix_c_list, matrix_c_low_list, M*2))"),)),
    Fix("skip-k-over-24000", _LP + "linear_parallel_test_moe_matmul_alltoallv.py",
        "its random test draws K up to 32767, and ATB refuses K > 24000 for the MoE types (MAX_K in "
        "linear_parallel_operation.cpp: ERROR_INVALID_TENSOR_SIZE); such draws are skipped as the file already "
        "skips those its kernel cannot take (M * kalign * 2 >= max_int32)",
        (("if M * kalign * 2 >= max_int32:", "if M * kalign * 2 >= max_int32 or K > 24000:"),)),
]
for _random_file in ("linear_parallel_test_moe_alltoallv_matmul.py", "linear_parallel_test_moe_matmul_alltoallv.py"):
    FIXES += [
        Fix(f"seed-random-cases-{RANDOM_SEED}", _LP + _random_file,
            "not a fault: its random test draws shapes from Python's random module without a seed; seeded, a cut "
            "run tests the same cases every time",
            (("        i = 0\n", f"        i = 0\n        __import__('random').seed({RANDOM_SEED})\n"),)),
        Fix(f"cut-cases-700-to-{MOE_RANDOM_CASES}", _LP + _random_file,
            f"not a fault: its 700 random cases take hours on 2 cores; the first {MOE_RANDOM_CASES} run",
            (("if i >= 700:", f"if i >= {MOE_RANDOM_CASES}:"),)),
    ]
FIXES.append(
    Fix("send-ranks-in-range", "send/test_send_operation.py",
        "every rank makes a SendOperation with destRank rank+2 (and a RecvOperation with srcRank rank-2): ranks 2 "
        "and 3 ask for destRank 4 and 5 of rankSize 4, which ATB's CreateOperation refuses (ERROR_INVALID_PARAM), "
        "so they never receive; taken modulo the world size (ranks 2 and 3 only receive, 0 and 1 only send)",
        (('"destRank": rank+2', '"destRank": (rank+2) % world_size'),
         ('"srcRank": rank-2', '"srcRank": (rank-2) % world_size'))))


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


def apply_fix(text: str, fix: Fix) -> str:
    """The text with one fix applied.

    Raises:
        FixDoesNotApply: when an expected text does not occur exactly once (naming the fix, the file and the text).
    """
    spans = []
    for expected, replacement in fix.edits:
        found = text.count(expected)
        if found != 1:
            raise FixDoesNotApply(
                f"fix '{fix.name}' for {fix.file}: expected {expected!r} once in the file, found it {found} times; "
                f"ATB's file has changed: check by hand whether the fault is still there ({fix.defect}) and update "
                "FIXES in scripts/run_atb_tests.py")
        start = text.index(expected)
        spans.append((start, start + len(expected), replacement))
    spans.sort()
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False)):
        raise FixDoesNotApply(f"fix '{fix.name}' for {fix.file}: its expected texts overlap")
    pieces, at = [], 0
    for start, end, replacement in spans:
        pieces += [text[at:start], replacement]
        at = end
    return "".join(pieces + [text[at:]])


def with_fixes(root: Path, tests: list[TestFile], workdir: Path, fixes: list[Fix] | None = None) -> list[TestFile]:
    """The files to run with --with-fixes: those with fixes run from a fixed copy of ATB's tree in workdir.

    ATB's python test tree (tests/apitest/opstest/python, a few MB) is copied whole, so that the files' imports
    relative to their own folder still work; the checkout itself is not touched.

    Args:
        root: the ATB checkout.
        tests: the files discovered there.
        workdir: an empty temporary folder outside this repository.
        fixes: the fixes to consider (FIXES by default).

    Returns:
        tests, the fixed ones pointed at their copies and carrying their fixes' names.

    Raises:
        FixDoesNotApply: when a fix's file is missing or its expected text is not there exactly once.
    """
    fixes = FIXES if fixes is None else fixes
    selected_ops = {t.name.split("/")[0] for t in tests}
    by_file: dict[str, list[Fix]] = {}
    for fix in fixes:
        if fix.file.split("/")[0] in selected_ops:
            by_file.setdefault(fix.file, []).append(fix)
    names = {t.name for t in tests}
    for file in by_file:
        if file not in names:
            raise FixDoesNotApply(f"fix '{by_file[file][0].name}': {OPS_DIR / file} is not in the checkout (ATB "
                                  "renamed or removed it); update FIXES in scripts/run_atb_tests.py")
    if not by_file:
        return tests
    tree = OPS_DIR.parent
    shutil.copytree(root / tree, workdir / tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    fixed_ops = workdir / OPS_DIR
    out = []
    for test in tests:
        file_fixes = by_file.get(test.name)
        if not file_fixes:
            out.append(test)
            continue
        path = fixed_ops / test.name
        text = path.read_text()
        for fix in file_fixes:
            text = apply_fix(text, fix)
        path.write_text(text)
        out.append(replace(test, cwd=path.parent, python_path=(fixed_ops,),
                           fixes=tuple(f.name for f in file_fixes)))
    return out


def run_file(test: TestFile, device: str, timeout: float) -> dict:
    """Runs one file under the launcher, this script acting as the unittest driver in that process.

    Returns:
        {"name", "verdict" (PASS/FAIL/TIMEOUT), "children" (exit codes), "tests_run", "skipped", "seconds",
        "tail" (the last lines of output when it did not pass), "fixes" (the names of the fixes applied)}.
    """
    command = [sys.executable, "-m", "atb_ops", "run", "--device", device, str(Path(__file__).resolve()),
               "--as-unittest", *test.unittest_args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*filter(None, [env.get("PYTHONPATH")]), *map(str, test.python_path)])
    start = time.monotonic()
    # A session of its own: on a timeout the whole file goes, the ranks it started too (they outlive their parent
    # otherwise and wait in their rendezvous until ATB_OPS_TIMEOUT, under a later file's feet).
    child = subprocess.Popen(command, cwd=test.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
        proc = subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        return {"name": test.name, "verdict": "TIMEOUT", "children": [], "tests_run": 0, "skipped": 0,
                "seconds": round(time.monotonic() - start, 1), "tail": out[-2000:], "fixes": list(test.fixes)}
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
            "tail": "" if verdict == "PASS" else output[-2000:], "fixes": list(test.fixes)}


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
    parser.add_argument("--with-fixes", action="store_true",
                        help="run the files FIXES names from a fixed copy (see the module docstring)")
    parser.add_argument("--check-fixes", action="store_true",
                        help="only check that every fix still applies to the checkout; run nothing")
    args = parser.parse_args(argv)
    root = args.atb_root.resolve()
    if root == REPO or REPO in root.parents:
        parser.error(f"--atb-root {root} is inside this repository; ATB's tests are run from a copy outside it")
    with tempfile.TemporaryDirectory(prefix="atb_fixed_") as workdir:
        tests = discover(root, args.only, args.generalized or args.check_fixes)
        if args.with_fixes or args.check_fixes:
            flag = "--check-fixes" if args.check_fixes else "--with-fixes"
            try:
                tests = with_fixes(root, tests, Path(workdir))
            except FixDoesNotApply as e:
                print(f"{flag}: {e}", file=sys.stderr)
                return 2
            applied = [f for f in FIXES if any(f.name in t.fixes and f.file == t.name for t in tests)]
            if args.check_fixes:
                files = len({f.file for f in applied})
                print(f"{len(applied)} fix{'es apply' if len(applied) != 1 else ' applies'} to {files} "
                      f"file{'s' if files != 1 else ''}")
                return 0
            for fix in applied:
                print(f"fix {fix.name} ({fix.file}): {fix.defect}", flush=True)
        return run_all(tests, args)


def run_all(tests: list[TestFile], args: argparse.Namespace) -> int:
    """Runs the files one after another, printing a line each and the summary; the exit status."""
    results = []
    for test in tests:
        res = run_file(test, args.device, args.timeout)
        results.append(res)
        children = res["children"]
        verdict = res["verdict"] + (f" (fixes: {', '.join(res['fixes'])})" if res["fixes"] else "")
        print(f"{verdict:12} {res['name']:60} children {sum(c == 0 for c in children)}/{len(children)} exit 0, "
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
