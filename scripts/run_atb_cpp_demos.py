"""Builds and runs ATB's C++ communication demos, unchanged, with their own build.sh, against atb_ops.

ATB's repository (hicann/ascend-transformer-boost) has C++ demos in example/op_demo/<demo>/: a .cpp that makes
its ranks (all_gather and linear_parallel fork 2 processes, all_reduce runs 8 threads with commMode 1 and backend
"lccl") and a build.sh that compiles it with `g++ -I$ATB_HOME_PATH/include -I$ASCEND_HOME_PATH/include ... -latb
-lascendcl` and runs it. This script copies each demo folder (with op_demo/demo_util.h beside it) to a private
folder, runs its build.sh there with bash after `python -m atb_ops env`'s variables, and asks libatb.so for one
INFO line per finished Execute (ASCEND_GLOBAL_LOG_LEVEL=1), so every rank's result is seen: the demos print little
(the threads' failures only as "[ErrorCode]" lines) and never check a value. linear_parallel's build.sh builds
linear_parallel_demo only; "linear_parallel_quant" runs that build.sh with linear_parallel_quant_demo named instead.

Usage::

    git clone --depth 1 https://github.com/hicann/ascend-transformer-boost /tmp/atb   # outside this repo
    python scripts/run_atb_cpp_demos.py --atb-root /tmp/atb                  # every demo in DEMOS
    python scripts/run_atb_cpp_demos.py --atb-root /tmp/atb --only all_gather

Verdict per demo: PASS when build.sh exited 0, nothing printed an error code ("[ErrorCode]" of demo_util.h's
CHECK_STATUS, "failed"), libatb.so logged no error, and every rank 0..n-1 of each operator logged a finished
Execute; else FAIL with the reason. One line per rank follows. Exit status 1 unless every demo passed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO_DIR = Path("example/op_demo")
# demo -> (its folder, (program build.sh builds, program built instead)): build.sh of linear_parallel builds
# linear_parallel_demo only; its quantised sibling is built by the same line with the program's name changed.
DEMOS: dict[str, tuple[str, tuple[str, str] | None]] = {
    "all_gather": ("all_gather", None),
    "all_reduce": ("all_reduce", None),
    "linear_parallel": ("linear_parallel", None),
    "linear_parallel_quant": ("linear_parallel", ("linear_parallel_demo", "linear_parallel_quant_demo")),
}
DONE = re.compile(r"\[INFO\] .*?(\w+Operation)::Execute \(rank (\d+) of (\d+)\) done")
LIBATB_ERROR = "[atb_ops libatb] [ERROR]"


@dataclass
class DemoResult:
    name: str
    verdict: str
    reason: str
    seconds: float
    ranks: dict[str, list[str]] = field(default_factory=dict)  # operator -> one line per rank
    output: str = ""


def emulation_env() -> dict[str, str]:
    """The environment of a shell after `eval "$(python -m atb_ops env)"`."""
    proc = subprocess.run([sys.executable, "-m", "atb_ops", "env"], capture_output=True, text=True, check=True)
    exported = dict(re.findall(r"^export (\w+)=(.*)$", proc.stdout, re.MULTILINE))
    return {**os.environ, **exported}


def judge(name: str, returncode: int | None, output: str, seconds: float) -> DemoResult:
    """The verdict of one demo from its exit status and everything it (and libatb.so) printed."""
    ranks: dict[str, dict[int, int]] = {}
    for op, rank, size in DONE.findall(output):
        ranks.setdefault(op, {})[int(rank)] = int(size)
    lines = {op: [f"rank {r}: Execute done" for r in sorted(done)] for op, done in ranks.items()}
    if returncode is None:
        return DemoResult(name, "TIMEOUT", "build.sh did not finish", seconds, lines, output)
    problems = []
    if returncode != 0:
        problems.append(f"build.sh exited {returncode}")
    if "[ErrorCode]" in output or re.search(r"\bfailed\b", output):
        problems.append("the demo printed an error code")
    if LIBATB_ERROR in output:
        problems.append("libatb.so logged an error")
    if not ranks:
        problems.append("no rank finished an Execute")
    for op, done in ranks.items():
        size = max(done.values())
        missing = sorted(set(range(size)) - set(done))
        if missing:
            problems.append(f"{op}: rank(s) {missing} of {size} never finished an Execute")
    if problems:
        return DemoResult(name, "FAIL", "; ".join(problems), seconds, lines, output)
    return DemoResult(name, "PASS", "every rank finished", seconds, lines, output)


def run_demo(root: Path, name: str, timeout: float) -> DemoResult:
    folder_name, swap = DEMOS[name]
    source = root / DEMO_DIR / folder_name
    if not (source / "build.sh").is_file():
        return DemoResult(name, "FAIL", f"{source}/build.sh does not exist", 0.0)
    with tempfile.TemporaryDirectory(prefix="atb_demo_") as work:
        # build.sh compiles ../demo_util.h and writes its binary beside it: a copy keeps ATB's tree untouched.
        shutil.copy2(root / DEMO_DIR / "demo_util.h", Path(work) / "demo_util.h")
        folder = Path(work) / folder_name
        shutil.copytree(source, folder)
        if swap is not None:
            script = folder / "build.sh"
            script.write_text(script.read_text().replace(swap[0], swap[1]))
        env = {**emulation_env(), "ASCEND_GLOBAL_LOG_LEVEL": "1", "ATB_OPS_TIMEOUT": str(int(timeout / 2))}
        start = time.monotonic()
        try:
            proc = subprocess.run(["bash", "build.sh"], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return judge(name, None, out, time.monotonic() - start)
        return judge(name, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--atb-root", type=Path, required=True, help="a checkout of hicann/ascend-transformer-boost")
    parser.add_argument("--only", nargs="+", choices=DEMOS, help="these demos only")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per demo (build and run)")
    parser.add_argument("--verbose", action="store_true", help="print each demo's whole output")
    args = parser.parse_args(argv)
    root = args.atb_root.resolve()
    if not (root / DEMO_DIR).is_dir():
        parser.error(f"--atb-root {root}: no {DEMO_DIR} in it; expected a checkout of hicann/ascend-transformer-boost")
    if root == REPO or REPO in root.parents:
        parser.error(f"--atb-root {root} is inside this repository; ATB's demos are built from a copy outside it")
    results = [run_demo(root, name, args.timeout) for name in (args.only or DEMOS)]
    for r in results:
        print(f"{r.verdict:7} {r.name:22} {r.seconds:6.1f} s  {r.reason}")
        for op, lines in r.ranks.items():
            for line in lines:
                print(f"          {op} {line}")
        if args.verbose or r.verdict != "PASS":
            print("\n".join("          | " + line for line in r.output.splitlines()[-40:]))
    passed = sum(r.verdict == "PASS" for r in results)
    print(f"{passed}/{len(results)} demos passed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
