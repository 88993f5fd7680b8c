"""`python -m atb_ops doctor [--clean]`: which backends are built and usable here, and what crashed runs
left in /dev/shm.

atb_ops removes its shared-memory names as soon as every rank has attached, so a run that crashes
later leaves nothing. Only a run that died during its rendezvous can leave files; they are this user's
`/dev/shm/atb_ops.<uid>.*` files whose creating process is gone. `--clean` removes those and never a
live run's.
"""

from __future__ import annotations

import argparse
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path

SHM_DIR = Path("/dev/shm")
SEGMENT_MAGIC = 0x32306D6873627461  # "atbshm02", csrc/comm/shm/shm_communicator.cpp
SEGMENT_MAGICS = (SEGMENT_MAGIC, 0x31306D6873627461)  # and "atbshm01": earlier versions' leftovers
RECORD_MAGIC = "atb_ops-rdv-v1"  # csrc/comm/shm/rendezvous.cpp
STALE_TMP_S = 60.0


@dataclass
class Leftover:
    path: Path
    why: str


def user_prefix() -> str:
    return f"atb_ops.{os.getuid()}."


def process_alive(pid: int) -> bool:
    """Like the C++ check: a zombie (killed, not yet reaped) counts as dead."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def start_time(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rfind(")") + 2 :].split()[19])  # field 22


def _segment_root(path: Path) -> int | None:
    """The root pid in a segment's header, or None when it is not an atb_ops segment."""
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24:
        return None
    magic, _key, _size, root = struct.unpack("<QQii", head)
    return root if magic in SEGMENT_MAGICS else None


def find_leftovers(shm_dir: Path = SHM_DIR) -> list[Leftover]:
    """This user's atb_ops files whose creator is gone."""
    found = []
    for path in sorted(shm_dir.glob(user_prefix() + "*")):
        rest = path.name[len(user_prefix()) :]
        if rest.startswith("rdv.") and ".tmp." in rest:
            age = time.time() - path.stat().st_mtime
            if age > STALE_TMP_S:
                found.append(Leftover(path, f"unfinished rendezvous record, {age:.0f} s old"))
        elif rest.startswith("rdv."):
            fields = path.read_text(errors="replace").split()
            if len(fields) != 4 or fields[0] != RECORD_MAGIC:
                found.append(Leftover(path, "unreadable rendezvous record"))
                continue
            pid, started = int(fields[2]), int(fields[3])
            if not process_alive(pid) or start_time(pid) != started:
                found.append(Leftover(path, f"rendezvous record of root pid {pid}, which has exited"))
        else:
            root = _segment_root(path)
            if root is None:
                found.append(Leftover(path, "not an atb_ops segment (bad header)"))
            elif not process_alive(root):
                found.append(Leftover(path, f"segment created by pid {root}, which has exited"))
    return found


def backend_report() -> list[tuple[str, bool, str]]:
    """(backend, usable, why) for every backend atb_ops knows."""
    import torch
    import torch.distributed as dist

    from atb_ops import _C

    built = set(_C.backends())
    shm_ok = os.access(SHM_DIR, os.W_OK)
    rows = [
        ("shm", "shm" in built and shm_ok, "built; /dev/shm writable" if shm_ok else "/dev/shm not writable"),
        (
            "gloo",
            "gloo" in built and dist.is_gloo_available(),
            "built; torch.distributed has gloo" if dist.is_gloo_available() else "torch.distributed lacks gloo",
        ),
    ]
    cuda = torch.cuda.is_available()
    rows.append(
        (
            "nccl",
            "nccl" in built and cuda,
            ("built" if "nccl" in built else "not built (torch without CUDA or NCCL not found)")
            + ("; a CUDA device is present" if cuda else "; no CUDA device"),
        )
    )
    rows.append(
        (
            "hccl",
            "hccl" in built,
            "built" if "hccl" in built else "not built (no Ascend toolkit / torch_npu at build time)",
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m atb_ops doctor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clean", action="store_true", help="remove leftovers of dead runs (never a live run's)")
    args = parser.parse_args(argv)
    print("backends:")
    for name, usable, why in backend_report():
        print(f"  {name:5s} {'usable' if usable else 'no':7s} {why}")
    leftovers = find_leftovers()
    print(f"leftovers of crashed runs in {SHM_DIR}: {len(leftovers)}")
    for item in leftovers:
        if args.clean:
            item.path.unlink(missing_ok=True)
        print(f"  {'removed ' if args.clean else ''}{item.path}  ({item.why})")
    if leftovers and not args.clean:
        print("run `python -m atb_ops doctor --clean` to remove them")
    return 0
