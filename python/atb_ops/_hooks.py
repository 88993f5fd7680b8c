"""What only Python can give the native core: the job's torch.distributed store and gloo groups.

The bootstrap (csrc/comm/bootstrap/) exchanges communicator set-up bytes through the store of the default
process group when there is one (else, under torchrun, through its agent's store), and the "gloo" backend builds one
gloo group per commDomain on that store.
torch ships no gloo headers, so the group itself is constructed through torch.distributed's own binding.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta
from types import ModuleType

import torch.distributed as dist


def job_store(required: bool = False, rank: int = -1, size: int = 0, timeout_s: float = 1800.0) -> dist.Store | None:
    """The default process group's store; else, under torchrun, its agent's store; else None.

    Args:
        required: Without either, make a default group from MASTER_ADDR/MASTER_PORT (env://), as torch.distributed's
            own scripts do, instead of returning None. Its rank and size are RANK and WORLD_SIZE where the launcher
            set them (torchrun does), else `rank` and `size`: those of the communicator asking, right when it spans
            the whole job.
        rank: The asking communicator's rank.
        size: The asking communicator's size.
        timeout_s: ATB_OPS_TIMEOUT, for the new group.

    Returns:
        The store, or None.

    Raises:
        RuntimeError: When `required` and there is neither a default group nor MASTER_ADDR/MASTER_PORT.
    """
    if dist.is_available() and dist.is_initialized():
        return dist.distributed_c10d._get_default_store()
    agent = _agent_store(timeout_s)
    if agent is not None or not required:
        return agent
    if not (os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT")):
        raise RuntimeError(
            "backend 'gloo' needs torch.distributed: call torch.distributed.init_process_group('gloo', ...) "
            "or set MASTER_ADDR and MASTER_PORT"
        )
    env_rank, env_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    timeout = timedelta(seconds=timeout_s)
    if env_rank is not None and env_size is not None:  # the launcher's world: one size on every rank
        dist.init_process_group("gloo", init_method="env://", rank=int(env_rank), world_size=int(env_size),
                                timeout=timeout)
    else:
        # Each rank's own rankSize: compared on the store first, since torch's rendezvous would wait (past
        # ATB_OPS_TIMEOUT, naming nobody) for a world size that ranks which disagree never make up.
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=rank == 0,
                              wait_for_workers=False, timeout=timeout)
        where = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        _meet(dist.PrefixStore("atb_ops/default_group", store), f"torch.distributed's default group at {where}",
              rank, size, timeout_s)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=size, timeout=timeout)
    global _own_default_group
    _own_default_group = True
    return dist.distributed_c10d._get_default_store()


def make_gloo(prefix: str, rank: int, size: int, timeout_s: float,
              store: dist.Store | None = None) -> dist.ProcessGroupGloo:
    """A gloo backend of `size` ranks meeting under `prefix` of `store`, or of the job's store.

    Args:
        prefix: Store key prefix, unique per creation (it ends in a token of the root's).
        rank: This rank in the new group.
        size: Ranks in the new group.
        timeout_s: ATB_OPS_TIMEOUT, for gloo's own operations.
        store: The store the communicator was given (HCCL root info, a rank table); None: the job's.

    Returns:
        A ProcessGroupGloo backend.

    Raises:
        RuntimeError: When there is no default group and MASTER_ADDR/MASTER_PORT are not set.
    """
    base = store if store is not None else job_store(True, rank, size, timeout_s)
    scoped = dist.PrefixStore(prefix, base)
    _meet(scoped, f"the gloo group '{prefix}'", rank, size, timeout_s)
    return dist.ProcessGroupGloo(scoped, rank, size, timedelta(seconds=timeout_s))


def _meet(store: dist.Store, name: str, rank: int, size: int, timeout_s: float) -> None:
    """Waits until every rank of the new group arrived on `store`, bounded by ATB_OPS_TIMEOUT.

    gloo's own connection waits on the store with the store's timeout (often 30 minutes) and names nobody;
    this wait polls (so Ctrl-C interrupts it), names the ranks that never came, and compares every rank's
    rankSize, so ranks that disagree fail together here instead of hanging in gloo.

    Args:
        store: Where the ranks meet (scoped to this group).
        name: The group, for messages ("the gloo group '...'").
        rank: This rank.
        size: This rank's rankSize.
        timeout_s: ATB_OPS_TIMEOUT.

    Raises:
        RuntimeError: "ranks disagree on the rankSize ...", on every rank that met one that differs.
        TimeoutError: naming the ranks that did not come within the timeout.
    """
    store.set(f"arrived/{rank}", str(size))
    deadline = time.monotonic() + timeout_s
    seen: dict[int, int] = {}
    delay = 0.0005
    while True:
        for r in range(size):
            if r not in seen and store.check([f"arrived/{r}"]):
                seen[r] = int(store.get(f"arrived/{r}"))
        other = {r: s for r, s in seen.items() if s != size}
        if other:
            _tell_and_wait(store, rank, seen, min(2.0, max(0.0, deadline - time.monotonic())))
            views = "; ".join(f"rank {r} has rankSize {s}" for r, s in sorted(other.items()))
            raise RuntimeError(
                f"ERROR_INVALID_PARAM: ranks disagree on the rankSize of {name}: "
                f"rank {rank} has rankSize {size}; {views}; every rank must pass the same rankSize"
            )
        if len(seen) == size:
            return
        if time.monotonic() >= deadline:
            missing = ", ".join(str(r) for r in range(size) if r not in seen)
            raise TimeoutError(
                f"ERROR_COMM_TIMEOUT: rank(s) {missing} did not join the gloo group within "
                f"ATB_OPS_TIMEOUT={timeout_s:g} s"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _tell_and_wait(store: dist.Store, rank: int, seen: dict[int, int], wait_s: float) -> None:
    """Before a rank that found a disagreement raises: says it saw it, and waits (at most `wait_s`) until the ranks
    it met said so too, so that a rank serving the store does not take it away before they read what it wrote."""
    deadline = time.monotonic() + wait_s
    try:
        store.set(f"told/{rank}", "1")
        waiting = [f"told/{r}" for r in seen if r != rank]
        while waiting and time.monotonic() < deadline:
            waiting = [key for key in waiting if not store.check([key])]
            time.sleep(0.005)
    except (RuntimeError, OSError):
        pass  # the store went with a rank that already raised: nothing left to wait for


_own_default_group = False  # atb_ops made the default process group (make_gloo), so it also ends it
_agent: tuple[int, str, dist.Store] | None = None  # (pid, where, store): this process's client of torchrun's store


def _started_by_torchrun() -> bool:
    """Whether this process is one of torchrun's workers: its parent is torchrun's agent.

    A worker's own children (``torch.multiprocessing.spawn`` inside a worker, a job of their own) inherit the agent's
    variables, yet are no ranks of the torchrun job: on the agent's store they would meet the children of other
    workers under one key (two jobs, one commDomain). They meet as any process does (the node-local rendezvous,
    scoped by their job).

    Returns:
        True when the parent process runs ``torch.distributed.run`` (``torchrun``) or ``torch.distributed.launch``.
    """
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return False
    modules = ("torch.distributed.run", "torch.distributed.launch")
    files = ("torch/distributed/run.py", "torch/distributed/launch.py")
    return any(arg in modules or os.path.basename(arg) == "torchrun" or arg.endswith(files) for arg in argv[:3])


def _atb_ops_timeout_s() -> float:
    """ATB_OPS_TIMEOUT as the native core reads it (300 s when unset)."""
    from atb_ops import _C  # noqa: PLC0415  (loaded by the time a store is asked for)

    return float(_C.options()["ATB_OPS_TIMEOUT"])


def _agent_store(timeout_s: float) -> dist.Store | None:
    """torchrun's agent store, where a worker has no default group yet: ranks on several nodes meet on it.

    torchrun's agent serves a TCPStore at MASTER_ADDR:MASTER_PORT for its workers' whole life and says so with
    TORCHELASTIC_USE_AGENT_STORE=True; every worker joins it as a client, as torch's own env:// rendezvous does, so
    nothing is served and no default group is made behind the caller's back (its own init_process_group still
    works). The keys live under a prefix per restart attempt, apart from torch's.

    Args:
        timeout_s: ATB_OPS_TIMEOUT, for the connection and the store's waits (torch's default where 0).

    Returns:
        The store, or None outside torchrun (or where it gave no address).
    """
    global _agent
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or not addr or not port:
        return None
    where = f"{addr}:{port}"
    if _agent is not None and _agent[:2] == (os.getpid(), where):
        return _agent[2]
    if not _started_by_torchrun():  # a fork()ed child asks again: its parent is the worker
        return None
    # Bounded by ATB_OPS_TIMEOUT: a store on a node that was lost must not hold a rank for torch's 30 minutes.
    timeout = timedelta(seconds=timeout_s if timeout_s > 0 else _atb_ops_timeout_s())
    client = dist.TCPStore(addr, int(port), is_master=False, wait_for_workers=False, timeout=timeout)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    _agent = (os.getpid(), where, dist.PrefixStore(f"atb_ops/torchelastic/attempt_{attempt}", client))
    return _agent[2]


def destroy_own_default_group() -> None:
    """Destroys the default process group at exit if atb_ops made it (the user never saw it to destroy it)."""
    global _own_default_group
    if _own_default_group and dist.is_initialized():
        dist.destroy_process_group()
    _own_default_group = False


def install(native: ModuleType) -> None:
    """Hands the hooks to atb_ops._C: the store, gloo groups, and Ctrl-C in the main thread."""
    native.set_store_provider(job_store)
    native.set_gloo_factory(make_gloo)
    native.install_interrupt_check(threading.main_thread().native_id)
