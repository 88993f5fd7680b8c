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


def _bench_op(argv: list[str]) -> str | None:
    """The value of --op in `bench` arguments (--op NAME or --op=NAME), if any."""
    for i, arg in enumerate(argv):
        if arg == "--op" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--op="):
            return arg.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench" and _bench_op(argv[1:]) == "quant_allreduce":
        from atb_ops.bench import quant as bench_quant

        return bench_quant.main(argv[1:])
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
