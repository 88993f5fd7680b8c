"""Command line: python -m atb_ops {demo,bench,doctor,run,env} [options]."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "demo": ("atb_ops.demo", "the seed's AllToAllVV2 example on CPU ranks"),
    "bench": ("atb_ops.bench", "alltoallv latency and bandwidth (nccl-tests table) vs gloo and Open MPI"),
    "doctor": ("atb_ops.doctor", "built and usable backends; leftovers of crashed runs (--clean)"),
    "run": ("atb_ops.emulation.launcher:run_main", "run an ATB/torch_npu script unchanged (NPU emulation)"),
    "env": ("atb_ops.emulation.launcher:env_main", "print the NPU emulation's environment as export lines"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        unknown = bool(argv) and argv[0] not in ("-h", "--help")
        out = sys.stderr if unknown else sys.stdout
        if unknown:
            print(f"python -m atb_ops: unknown command {argv[0]!r}", file=out)
        print("usage: python -m atb_ops COMMAND [options]\n\ncommands:", file=out)
        for name, (_, what) in COMMANDS.items():
            print(f"  {name:8s} {what}", file=out)
        return 2 if unknown else 0
    module_name, _, function = COMMANDS[argv[0]][0].partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, function or "main")(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
