"""Running code under ``python -m atb_ops run`` (or with the emulation's variables) in fresh processes.

The emulation changes torch process-wide (the "npu" device name, torch.npu, patched functions), so
tests never turn it on inside pytest's own process: each case runs in a child and reads its output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import atb_ops
from atb_ops.emulation import config, launcher

PACKAGE_ROOT = str(Path(atb_ops.__file__).resolve().parent.parent)  # the python/ folder under test
TIMEOUT_S = 300


def env_without_emulation(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A child's environment: os.environ without any emulation variables, the atb_ops under test first on
    PYTHONPATH.

    Args:
        extra: variables to set on top.

    Returns:
        A new dict; os.environ is left alone.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (config.MODE_ENV, config.HOME_ENV, config.COUNT_ENV, config.NAME_ENV)
    }
    own = launcher.pythonpath_dir()
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.realpath(p) != own]
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, *kept])
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    env.update(extra or {})
    return env


def atb_ops_cmd(
    args: list[str], cwd: str | Path | None = None, env: dict[str, str] | None = None, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m atb_ops ARGS`` and returns its exit status and output (text)."""
    return subprocess.run(
        [sys.executable, "-m", "atb_ops", *args],
        cwd=cwd,
        env=env_without_emulation() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_emulated(
    code: str, device: str = "cpu", extra_env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs Python `code` under ``python -m atb_ops run --device DEVICE -c CODE``."""
    return atb_ops_cmd(["run", "--device", device, "-c", code], cwd=cwd, env=env_without_emulation(extra_env))


def run_with_emulation_env(
    code: str, device: str, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `code` with the emulation's variables set directly (no launcher checks: lets a test fake CUDA)."""
    env = env_without_emulation(extra_env)
    env["PYTHONPATH"] = os.pathsep.join([launcher.pythonpath_dir(), env["PYTHONPATH"]])
    env[config.MODE_ENV] = device
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


def output_of(proc: subprocess.CompletedProcess[str]) -> str:
    """stdout and stderr together, for assertion messages."""
    return f"--- exit status {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
