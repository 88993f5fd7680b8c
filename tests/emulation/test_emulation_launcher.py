"""`python -m atb_ops run` / `env`: like `python SCRIPT`, with the emulation on, and only when asked."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from atb_ops.emulation import launcher
from tests.support.emulation import atb_ops_cmd, env_without_emulation, output_of, run_emulated

REPORT = textwrap.dedent(
    """
    import json, os, sys
    import torch, torch_npu
    print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "name": __name__, "pid": os.getpid(),
                      "torch_npu": torch_npu.__file__, "npu": torch.npu.get_device_name(),
                      "home": os.environ.get("ATB_HOME_PATH"), "mode": os.environ.get("ATB_OPS_NPU_EMULATION")}))
    sys.exit(int(os.environ.get("EXIT_WITH", "0")))
    """
)


def _report(proc: subprocess.CompletedProcess[str]) -> dict:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, output_of(proc)
    return json.loads(lines[-1])


def test_script_keeps_argv_cwd_and_exit_status(tmp_path):
    script = tmp_path / "report.py"
    script.write_text(REPORT)
    work = tmp_path / "work dir"
    work.mkdir()
    env = env_without_emulation({"EXIT_WITH": "3"})
    proc = atb_ops_cmd(["run", str(script), "a", "b c", "--device", "cuda"], cwd=work, env=env)
    assert proc.returncode == 3, output_of(proc)
    got = _report(proc)
    assert got["argv"] == [str(script), "a", "b c", "--device", "cuda"]  # options after SCRIPT are its own
    assert got["cwd"] == str(work)
    assert got["name"] == "__main__"
    assert got["mode"] == "cpu"
    assert got["torch_npu"].startswith(launcher.pythonpath_dir())
    assert "Ascend910B" in got["npu"] and "emulation" in got["npu"]
    assert os.path.isfile(os.path.join(got["home"], "lib", "libatb_test_framework.so"))


def test_module_form_runs_like_python_m(tmp_path):
    (tmp_path / "report_mod.py").write_text(REPORT)
    proc = atb_ops_cmd(["run", "-m", "report_mod", "x", "-y"], cwd=tmp_path)
    assert proc.returncode == 0, output_of(proc)
    got = _report(proc)
    assert got["argv"] == [str(tmp_path / "report_mod.py"), "x", "-y"]
    assert got["name"] == "__main__"


def test_command_form_and_double_dash(tmp_path):
    proc = atb_ops_cmd(["run", "--", "-c", "import sys, torch_npu; print(sys.argv)", "arg"], cwd=tmp_path)
    assert proc.returncode == 0, output_of(proc)
    assert "['-c', 'arg']" in proc.stdout


def test_exec_keeps_pid_and_signals(tmp_path):
    """The launcher becomes the script (exec): same pid, and a signal ends it like a plain python."""
    script = tmp_path / "die.py"
    script.write_text("import os, signal\nprint(os.getpid(), flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "atb_ops", "run", str(script)],
        env=env_without_emulation(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGTERM, (out, err)
    assert int(out.split()[0]) == proc.pid


@pytest.mark.parametrize(
    "args, message",
    [
        (["run"], "nothing to run"),
        (["run", "--device", "tpu", "x.py"], "--device 'tpu'"),
        (["run", "--device"], "--device needs a value"),
        (["run", "--bogus", "x.py"], "unknown option '--bogus'"),
        (["run", "-m"], "-m needs a module"),
        (["env", "extra"], "unexpected argument 'extra'"),
    ],
)
def test_usage_errors(args, message):
    proc = atb_ops_cmd(args)
    assert proc.returncode == 2, output_of(proc)
    assert message in proc.stderr
    assert "usage: python -m atb_ops" in proc.stderr


def test_help():
    proc = atb_ops_cmd(["run", "--help"])
    assert proc.returncode == 0 and "-m MODULE" in proc.stdout
    listing = atb_ops_cmd(["--help"])
    assert "run" in listing.stdout and "env" in listing.stdout


def test_env_is_evaluated_by_bash_then_python(tmp_path):
    odd = tmp_path / "dir with 'quote' and space"
    odd.mkdir()
    (odd / "marker_mod.py").write_text("VALUE = 42\n")
    env = env_without_emulation()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(odd)])
    cmd = [sys.executable, "-m", "atb_ops", "env"]
    shell = (
        f'eval "$({shlex.join(cmd)})" && eval "$({shlex.join(cmd)})" && '  # twice: PYTHONPATH not doubled
        f"{shlex.quote(sys.executable)} -c "
        + shlex.quote(
            "import os, torch, torch_npu, marker_mod, atb_ops.emulation.launcher as L;"
            "parts = os.environ['PYTHONPATH'].split(os.pathsep);"
            "assert parts[0] == L.pythonpath_dir() and parts.count(L.pythonpath_dir()) == 1, parts;"
            "assert marker_mod.VALUE == 42;"
            "libs = os.environ['LD_LIBRARY_PATH'].split(os.pathsep);"
            "mine = [os.environ['ATB_HOME_PATH'] + '/lib', os.environ['ASCEND_HOME_PATH'] + '/lib64'];"
            "assert libs[:2] == mine, libs;"
            "assert len(set(libs)) == len(libs), libs;"
            "x = torch.ones(2).npu(); torch.npu.synchronize();"
            "print('ok', os.environ['ATB_OPS_NPU_EMULATION'], x.is_npu)"
        )
    )
    proc = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, output_of(proc)
    assert proc.stdout.strip().endswith("ok cpu True")
    exports = atb_ops_cmd(["env"], env=env).stdout.splitlines()
    assert [line.split("=", 1)[0] for line in exports] == [
        "export PYTHONPATH",
        "export ATB_HOME_PATH",
        "export ASCEND_HOME_PATH",
        "export LD_LIBRARY_PATH",
        "export ATB_OPS_NPU_EMULATION",
    ]


def _fake_real_torch_npu(tmp_path) -> dict[str, str]:
    fake = tmp_path / "site"
    (fake / "torch_npu").mkdir(parents=True)
    (fake / "torch_npu" / "__init__.py").write_text("raise SystemExit('the real torch_npu was imported')\n")
    env = env_without_emulation()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(fake)])
    return env


def test_refuses_to_shadow_a_real_torch_npu(tmp_path):
    env = _fake_real_torch_npu(tmp_path)
    proc = atb_ops_cmd(["run", "-c", "print('ran')"], env=env)
    assert proc.returncode == 1, output_of(proc)
    assert "real torch_npu is importable" in proc.stderr and str(tmp_path / "site") in proc.stderr
    assert "--force-emulation" in proc.stderr and "ran" not in proc.stdout
    proc = atb_ops_cmd(["env"], env=env)
    assert proc.returncode == 1 and proc.stdout == "", output_of(proc)


@pytest.mark.parametrize("variable", ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"])
def test_refuses_to_shadow_a_real_ascend_toolkit(tmp_path, variable):
    """A toolkit's set_env.sh sets these; run and env refuse (naming it) unless --force-emulation."""
    env = env_without_emulation({variable: str(tmp_path / "Ascend" / "latest")})
    for args in (["run", "-c", "print('ran')"], ["env"]):
        proc = atb_ops_cmd(args, env=env)
        assert proc.returncode == 1 and "ran" not in proc.stdout, output_of(proc)
        assert f"a real Ascend toolkit is installed here ({variable}=" in proc.stderr, output_of(proc)
    proc = atb_ops_cmd(["env", "--force-emulation"], env=env)
    assert proc.returncode == 0 and "export ASCEND_HOME_PATH=" in proc.stdout, output_of(proc)


def test_env_accepts_its_own_ascend_home_and_finds_default_installs(tmp_path, monkeypatch):
    """ASCEND_HOME_PATH from an earlier `eval "$(python -m atb_ops env)"` is atb_ops' own folder, not a toolkit;
    a toolkit installed in a default place is found without any variable."""
    ours = launcher.emulation_env("cpu")["ASCEND_HOME_PATH"]
    assert launcher.find_real_ascend_toolkit({"ASCEND_HOME_PATH": ours, "HOME": str(tmp_path)}) is None
    install = tmp_path / "ascend-toolkit"
    install.mkdir()
    monkeypatch.setattr(launcher.config, "TOOLKIT_INSTALLS", ("/nonexistent/Ascend", str(install)))
    assert launcher.find_real_ascend_toolkit({"HOME": str(tmp_path)}) == str(install)


def test_a_real_atb_home_and_a_users_own_install_are_found(tmp_path):
    """ATB_HOME_PATH of a real ATB (its lib/libatb.so is not atb_ops') and a toolkit installed under the user's home
    (CANN's default without root) count as real; atb_ops' own ATB_HOME_PATH, from an earlier `env`, does not."""
    ours = launcher.emulation_env("cpu")
    assert launcher.find_real_ascend_toolkit({"ATB_HOME_PATH": ours["ATB_HOME_PATH"], "HOME": str(tmp_path)}) is None
    real_atb = tmp_path / "nnal" / "atb" / "latest" / "atb" / "cxx_abi_1"
    (real_atb / "lib").mkdir(parents=True)
    (real_atb / "lib" / "libatb.so").write_bytes(b"\x7fELF ATB's own library")
    # atb_ops' libatb.so of another install (an ATB_HOME_PATH an earlier `env` left) is not a real ATB.
    copied = tmp_path / "old_atb_ops_home"
    (copied / "lib").mkdir(parents=True)
    shutil.copyfile(os.path.join(ours["ATB_HOME_PATH"], "lib", "libatb.so"), copied / "lib" / "libatb.so")
    assert launcher.find_real_ascend_toolkit({"ATB_HOME_PATH": str(copied), "HOME": str(tmp_path)}) is None
    found = launcher.find_real_ascend_toolkit({"ATB_HOME_PATH": str(real_atb), "HOME": str(tmp_path)})
    assert found == f"ATB_HOME_PATH={real_atb}"
    (tmp_path / "Ascend" / "ascend-toolkit").mkdir(parents=True)
    assert launcher.find_real_ascend_toolkit({"HOME": str(tmp_path)}) == str(tmp_path / "Ascend" / "ascend-toolkit")


def test_force_emulation_overrides(tmp_path):
    env = _fake_real_torch_npu(tmp_path)
    code = "import os, torch_npu; print(torch_npu.__file__, os.environ['TORCH_DEVICE_BACKEND_AUTOLOAD'])"
    proc = atb_ops_cmd(["run", "--force-emulation", "-c", code], env=env)
    assert proc.returncode == 0, output_of(proc)
    path, autoload = proc.stdout.split()
    assert path.startswith(launcher.pythonpath_dir()) and autoload == "0"


def test_nested_launch_is_not_a_real_torch_npu():
    """A launcher started inside the emulation sees only its own torch_npu and runs."""
    code = (
        "import subprocess, sys;"
        "r = subprocess.run([sys.executable, '-m', 'atb_ops', 'run', '-c', 'import torch_npu; print(7)'],"
        " capture_output=True, text=True); print(r.returncode, r.stdout.strip(), r.stderr[-300:])"
    )
    proc = run_emulated(code)
    assert proc.returncode == 0 and proc.stdout.startswith("0 7"), output_of(proc)


def test_plain_imports_are_unaffected():
    code = textwrap.dedent(
        """
        import importlib.util, sys
        import torch, atb_ops, atb_ops.emulation, atb_ops.torch_atb
        assert not hasattr(torch, "npu") and "torch.npu" not in sys.modules
        assert "torch_npu" not in sys.modules and importlib.util.find_spec("torch_npu") is None
        assert importlib.util.find_spec("torch_atb") is None
        assert not hasattr(torch.Tensor, "npu") and not hasattr(torch.Tensor, "is_npu")
        assert torch._C._get_privateuse1_backend_name() == "privateuseone"
        try:
            torch.device("npu:0")
        except RuntimeError:
            print("plain")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env_without_emulation(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "plain", output_of(proc)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_device_cuda_without_gpu_is_refused():
    proc = atb_ops_cmd(["run", "--device", "cuda", "-c", "print('ran')"])
    assert proc.returncode == 1, output_of(proc)
    assert "--device cuda" in proc.stderr and "torch.cuda.is_available() is False" in proc.stderr


def test_interpreter_flags_are_passed_on(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-W", "ignore::ResourceWarning", "-X", "utf8", "-m", "atb_ops", "run", "-c",
         "import sys; print(sys.warnoptions, sys.flags.utf8_mode)"],
        env=env_without_emulation(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, output_of(proc)
    assert "['ignore::ResourceWarning'] 1" in proc.stdout


SUBGROUPS = textwrap.dedent("""
    import json, os, sys
    import torch
    import torch.multiprocessing as mp


    def worker(rank):
        import atb_ops  # noqa: F401
        # ATB's multi-communicator pattern: 4 processes, two AllReduce groups of 2 told apart by commDomain.
        op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        op.set_param(json.dumps({"rank": rank % 2, "rankSize": 2, "backend": "shm", "allReduceType": "sum",
                                 "commDomain": "first" if rank < 2 else "second"}))
        got = op.execute([torch.full((8,), float(rank + 1))])[0]
        group = (1, 2) if rank < 2 else (3, 4)
        assert torch.equal(got, torch.full((8,), float(sum(group)))), (rank, got)


    if __name__ == "__main__":
        print(os.environ["ATB_OPS_JOB_ID"])
        mp.spawn(worker, nprocs=4)  # raises if a child failed
""")


def test_one_run_is_one_job_with_several_communicators(tmp_path):
    """`atb_ops run` gives its processes one job id, so a job of 4 processes with two 2-rank communicators (by
    commDomain) pairs within its groups, instead of the parent scope's refusal of more processes than ranks."""
    script = tmp_path / "subgroups.py"
    script.write_text(SUBGROUPS)
    env = env_without_emulation()
    env.pop("ATB_OPS_JOB_ID", None)
    proc = atb_ops_cmd(["run", str(script)], env=env)
    assert proc.returncode == 0, output_of(proc)
    assert proc.stdout.startswith("atb_ops-run-"), output_of(proc)
    again = atb_ops_cmd(["run", "-c", "import os; print(os.environ['ATB_OPS_JOB_ID'])"], env=env)
    assert again.stdout.strip() != proc.stdout.splitlines()[0], "every run is a job of its own"
    kept = atb_ops_cmd(["run", "-c", "import os; print(os.environ['ATB_OPS_JOB_ID'])"],
                       env={**env, "ATB_OPS_JOB_ID": "mine"})
    assert kept.stdout.strip() == "mine", output_of(kept)


TWO_SPAWN_JOBS = textwrap.dedent("""
    import json, sys, time
    import torch, torch_npu  # noqa: F401  (an ATB-style harness: the emulation, so atb_ops, is loaded here)
    import torch.multiprocessing as mp


    def worker(rank, tag, slow):
        time.sleep(3.0 if rank == slow else 0.0)  # job 1's rank 1 and job 2's rank 0 load a model first
        op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm"}))
        got = op.execute([torch.arange(4, dtype=torch.float64) + 1000 * rank + 1e6 * tag])[0].reshape(2, 4)
        want = torch.stack([torch.arange(4, dtype=torch.float64) + 1000 * r + 1e6 * tag for r in range(2)])
        assert torch.equal(got, want), (tag, rank, got)


    if __name__ == "__main__":
        jobs = [mp.spawn(worker, args=(tag, slow), nprocs=2, join=False) for tag, slow in ((1, 1), (2, 0))]
        for job in jobs:
            while not job.join():  # raises if a child failed
                pass
        print("ok")
""")


def test_two_spawned_jobs_side_by_side_in_one_run_never_pair(tmp_path):
    """The run's job id is narrowed per torch.multiprocessing.spawn call: two 2-rank jobs started side by side by one
    run's script (a harness running two tests at once) each get their own data (they paired across jobs when every
    child carried the run's one id)."""
    script = tmp_path / "two_jobs.py"
    script.write_text(TWO_SPAWN_JOBS)
    env = env_without_emulation()
    env.pop("ATB_OPS_JOB_ID", None)
    proc = atb_ops_cmd(["run", str(script)], env={**env, "ATB_OPS_TIMEOUT": "30"})
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), output_of(proc)


RANK_OF_A_JOB = textwrap.dedent("""
    import json, os, sys
    import torch, torch_npu  # noqa: F401
    rank = int(os.environ["RANK"])
    op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "hccl", "allReduceType": "sum"}))
    print(os.environ.get("ATB_OPS_JOB_ID"), op.execute([torch.full((4,), rank + 1.0).npu()])[0].tolist())
""")


def test_a_run_that_is_one_rank_of_a_launched_job_meets_its_peers(tmp_path):
    """`launcher ... python -m atb_ops run prog` (mpirun, torchrun, srun: RANK or the launcher's own variables set):
    the run is one rank, so it takes no job id of its own (one per run kept the ranks apart until they timed out);
    the launcher's proof, or here their one parent, scopes them as it would `python prog`."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_OF_A_JOB)
    env = env_without_emulation()
    env.pop("ATB_OPS_JOB_ID", None)
    ranks = [subprocess.Popen([sys.executable, "-m", "atb_ops", "run", str(script)], text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**env, "RANK": str(r), "ATB_OPS_TIMEOUT": "30"})
             for r in range(2)]
    for r, proc in enumerate(ranks):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"rank {r}: {out}{err[-3000:]}"
        assert out.strip() == "None [3.0, 3.0, 3.0, 3.0]", f"rank {r}: {out}{err[-3000:]}"
    launched = atb_ops_cmd(["run", "-c", "import os; print(os.environ.get('ATB_OPS_JOB_ID'))"],
                           env={**env, "PMIX_NAMESPACE": "prterun-host-1234@1"})
    assert launched.stdout.strip() == "None", output_of(launched)
