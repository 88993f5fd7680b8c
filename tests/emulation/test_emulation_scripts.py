"""ATB-shaped scripts run unchanged under ``python -m atb_ops run`` on CPU ranks, in every way of starting
ranks that ATB's tests use; every rank's result and every child's exit status is checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.emulation import atb_ops_cmd, output_of

ATB_STYLE = Path(__file__).resolve().parent / "atb_style"  # the scripts, beside this file

DTYPES = ["int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"]
OK_LINE = re.compile(r"rank (\d) (\w+) ok")


def _ranks_ok(text: str) -> set[tuple[int, str]]:
    return {(int(rank), dtype) for rank, dtype in OK_LINE.findall(text)}


def _assert_clean(proc) -> None:
    assert proc.returncode == 0, output_of(proc)
    for sign in ("Traceback", "AssertionError", "Error:"):
        assert sign not in proc.stdout + proc.stderr, output_of(proc)


@pytest.mark.parametrize("start", ["spawn", "forkserver", "mp_spawn", "subprocess"])
def test_alltoallvv2_ranks(start):
    """multiprocessing.Process (spawn, forkserver), torch.multiprocessing.spawn, subprocess of python."""
    proc = atb_ops_cmd(["run", "alltoallvv2_ranks.py", start], cwd=ATB_STYLE)
    _assert_clean(proc)
    assert _ranks_ok(proc.stdout) == {(r, d) for r in range(2) for d in DTYPES}, output_of(proc)
    assert "exit codes [0, 0]" in proc.stdout


def test_alltoallvv2_under_torchrun():
    args = ["run", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    proc = atb_ops_cmd([*args, "alltoallvv2_ranks.py", "torchrun"], cwd=ATB_STYLE)
    _assert_clean(proc)
    assert _ranks_ok(proc.stdout) == {(r, d) for r in range(2) for d in DTYPES}, output_of(proc)


def test_seed004_script_unchanged():
    """Seed 004's script (completed only where the seed elides lines), run as ATB runs its tests.

    Its children assert and the parent never checks their exit status, so their output is read: every
    rank printed an output for every dtype, the values are the seed's, and nothing failed.
    """
    proc = atb_ops_cmd(["run", "-m", "unittest", "seed004_all_to_allvv2.py"], cwd=ATB_STYLE)
    _assert_clean(proc)
    assert re.search(r"Ran 1 test in .*\n\nOK", proc.stderr), output_of(proc)
    outputs = re.findall(r"acl_out_tensor=tensor\((\[\[[^\]]*\]\])(?:, dtype=torch\.(\w+))?\)", proc.stdout)
    # torch prints no dtype for its defaults: int64, and float32 (whose values have a decimal point)
    got = {(v.replace(" ", ""), d or ("float32" if "." in v else "int64")) for v, d in outputs}
    expected_values = {"[[0,1,0,1]]", "[[2,3,4,5,2]]"}
    for dtype in DTYPES:
        for values in expected_values:
            if dtype.startswith("float") or dtype == "bfloat16":
                values = values.replace(",", ".,").replace("]]", ".]]")
            assert (values, dtype) in got, (values, dtype, output_of(proc))
    assert len(outputs) == 2 * len(DTYPES)


def test_torch_atb_script():
    proc = atb_ops_cmd(["run", "torch_atb_all_gather.py"], cwd=ATB_STYLE)
    _assert_clean(proc)
    dtypes = ["float16", "bfloat16", "float32", "int8", "int32"]
    assert _ranks_ok(proc.stdout) == {(r, d) for r in range(2) for d in dtypes}, output_of(proc)
    assert "all ranks passed" in proc.stdout
