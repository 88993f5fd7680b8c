"""`python -m atb_ops doctor [--clean]`: which native parts this install built, which backends are usable here,
and what crashed runs left.

The build records every native part it made, and why it left an optional one out (NCCL without CUDA, HCCL for
NPUs without the Ascend toolkit), in ``atb_ops/BUILT_PARTS.json``; doctor lists them and checks that the files
of every built part are still there.

Every node-local name atb_ops makes lives in one private folder, ``<ATB_OPS_SHM_DIR>/atb_ops-<uid>/`` (mode
0700): control segments ``seg.*``, rendezvous records ``rdv.*`` and their temporaries ``tmp.*``, rank claims
``clm.*`` and verdicts ``amb.*`` (csrc/comm/bootstrap/job_census.h). Names are removed as soon as every rank has
attached, so files stay behind only from a run that died during its rendezvous, a root whose creation failed (its
record tells the ranks still to come why, until it is stale), or a parent-scoped rank that left by ``_exit``
(its claim); their creating process is gone, and the next creation in the folder removes them too. ``--clean``
removes those and never a live run's. Anything else found there (a
folder, a link, a FIFO, another user's file) is reported and left alone: doctor never follows a link, never
blocks on a FIFO and never removes what is not atb_ops'.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

STALE_TMP_S = 60.0


@dataclass
class Finding:
    """A file in the private folder that is not part of a live run."""

    path: Path
    why: str
    removable: bool  # a leftover of a dead atb_ops run (doctor --clean removes it)


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
        proc_stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return proc_stat[proc_stat.rfind(")") + 2] not in "ZX"


def start_time(pid: int) -> int:
    """Start time of a process in clock ticks since boot; 0 when unknown."""
    try:
        proc_stat = Path(f"/proc/{pid}/stat").read_text()
        return int(proc_stat[proc_stat.rfind(")") + 2 :].split()[19])  # field 22
    except (OSError, ValueError, IndexError):
        return 0


def _formats() -> dict:
    from atb_ops import _C

    return _C.node_files()


def _read_head(path: Path, size: int) -> bytes | None:
    """The first bytes of a regular file, opened without following links or blocking; None if unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def _i32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little", signed=True)


def _inspect(path: Path, fmt: dict, uid: int) -> Finding | None:
    """A finding for one entry of the folder, or None when it belongs to a live run."""
    try:
        st = path.lstat()
    except OSError:
        return None  # removed meanwhile
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        return Finding(path, f"not a regular file (mode {stat.filemode(st.st_mode)}); left alone", False)
    if st.st_uid != uid:
        return Finding(path, f"owned by uid {st.st_uid}; left alone", False)
    name = path.name
    if name.startswith("tmp."):
        age = time.time() - st.st_mtime
        return Finding(path, f"unfinished rendezvous record, {age:.0f} s old", True) if age > STALE_TMP_S else None
    if name.startswith("rdv."):
        head = _read_head(path, 48)
        if head is None or len(head) < 48 or _u64(head, 0) != fmt["record_magic"]:
            return Finding(path, "not an atb_ops rendezvous record; left alone", False)
        pid = _i32(head, fmt["record_root_pid_offset"])
        started = _u64(head, fmt["record_start_time_offset"])
        if not process_alive(pid) or start_time(pid) != started:
            return Finding(path, f"rendezvous record of root pid {pid}, which has exited", True)
        return None
    if name.startswith("seg."):
        head = _read_head(path, 128)
        if head is None or len(head) < 64 or _u64(head, 0) != fmt["segment_magic"]:
            return Finding(path, "not an atb_ops segment; left alone", False)
        pid = _i32(head, fmt["segment_root_pid_offset"])
        if not process_alive(pid) or start_time(pid) != _u64(head, fmt["segment_start_time_offset"]):
            return Finding(path, f"segment created by pid {pid}, which has exited", True)
        return None
    if name.startswith("clm."):
        head = _read_head(path, 32)
        if head is None or len(head) < 24 or _u64(head, 0) != fmt["claim_magic"]:
            return Finding(path, "not an atb_ops rank claim; left alone", False)
        pid = _i32(head, fmt["claim_pid_offset"])
        if not process_alive(pid) or start_time(pid) != _u64(head, fmt["claim_start_time_offset"]):
            return Finding(path, f"rank claim of pid {pid}, which has exited", True)
        return None
    if name.startswith("amb."):
        n = fmt["verdict_pids"]
        head = _read_head(path, fmt["verdict_starts_offset"] + 8 * n)
        if head is None or len(head) < fmt["verdict_starts_offset"] + 8 * n or _u64(head, 0) != fmt["verdict_magic"]:
            return Finding(path, "not an atb_ops two-jobs verdict; left alone", False)
        count = min(max(_i32(head, fmt["verdict_count_offset"]), 0), n)
        pids = [_i32(head, fmt["verdict_pids_offset"] + 4 * i) for i in range(count)]
        starts = [_u64(head, fmt["verdict_starts_offset"] + 8 * i) for i in range(count)]
        if any(process_alive(p) and start_time(p) == s for p, s in zip(pids, starts, strict=True)):
            return None
        return Finding(path, f"two-jobs verdict of pids {pids}, which have exited", True)
    return Finding(path, "not an atb_ops name; left alone", False)


def private_folder() -> Path:
    """The private folder of this user (ATB_OPS_SHM_DIR respected)."""
    return Path(_formats()["dir"])


def find_leftovers(folder: Path | None = None) -> list[Finding]:
    """Everything in the private folder that is not part of a live run (removable or not)."""
    fmt = _formats()
    folder = folder or Path(fmt["dir"])
    try:
        st = folder.lstat()
    except FileNotFoundError:
        return []
    uid = os.getuid()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        return [Finding(folder, f"is not a folder of uid {uid}; atb_ops cannot run here until it is removed", False)]
    found = []
    for path in sorted(folder.iterdir()):
        finding = _inspect(path, fmt, uid)
        if finding is not None:
            found.append(finding)
    return found


PARTS_RECORD = Path(__file__).resolve().parent / "BUILT_PARTS.json"


def parts_report(record: Path = PARTS_RECORD) -> list[tuple[str, str, str]]:
    """What this install's build made, part by part.

    Args:
        record: The build's record (BUILT_PARTS.json next to the package).

    Returns:
        (part, state, detail) rows; state is "built", "not built" (detail: why) or "missing" (recorded as built,
        but a file is gone: detail names it). One "missing" row for the record itself when there is none.
    """
    try:
        parts = json.loads(record.read_text())["parts"]
    except (OSError, ValueError, KeyError) as err:
        why = f"{record} unreadable ({err}); rebuild: pip install --no-build-isolation ."
        return [("build record", "missing", why)]
    rows = []
    for name, part in parts.items():
        if not part["built"]:
            rows.append((name, "not built", part["why"]))
            continue
        gone = [f for f in part["files"] if not (record.parent / f).is_file()]
        if gone:
            rows.append((name, "missing", f"built, but {', '.join(gone)} is gone from {record.parent}"))
        else:
            rows.append((name, "built", ", ".join(part["files"]) or part["why"]))
    return rows


def backend_report() -> list[tuple[str, bool, str]]:
    """(backend, usable, why) for every backend atb_ops knows."""
    import torch
    import torch.distributed as dist

    from atb_ops import _C

    built = {name.split(" ")[0] for name in _C.backends()}
    folder = Path(_C.node_files()["dir"]).parent
    shm_ok = os.access(folder, os.W_OK)
    rows = [
        ("shm", "shm" in built and shm_ok, f"built; {folder} writable" if shm_ok else f"{folder} not writable"),
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
    hccl = [name for name in _C.backends() if name.startswith("hccl")]
    runner = Path(__file__).resolve().parent / "atb_home" / "lib" / "libatb.so"
    on_cpu = (
        "on CPU ranks under `python -m atb_ops run` (HCCL's C API on CPU)"
        if runner.is_file()
        else "HCCL's C API on CPU is not in this install"
    )
    rows.append(("hccl", bool(hccl), ", ".join(hccl) if hccl else f"not built for NPUs; {on_cpu}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m atb_ops doctor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clean", action="store_true", help="remove leftovers of dead runs (never a live run's)")
    args = parser.parse_args(argv)
    print("native parts (this install's build):")
    for name, state, detail in parts_report():
        print(f"  {name:28s} {state:9s} {detail}")
    print("backends:")
    for name, usable, why in backend_report():
        print(f"  {name:5s} {'usable' if usable else 'no':7s} {why}")
    findings = find_leftovers()
    folder = private_folder()
    print(f"in {folder}: {len(findings)} file(s) not part of a live run")
    for item in findings:
        removed = False
        if args.clean and item.removable:
            try:
                item.path.unlink()
                removed = True
            except OSError:
                pass
        print(f"  {'removed ' if removed else ''}{item.path}  ({item.why})")
    if any(item.removable for item in findings) and not args.clean:
        print("run `python -m atb_ops doctor --clean` to remove the leftovers of dead runs")
    return 0
