"""Rank-side code of tests/reliability/test_jobs_and_resources.py: snippets run as processes of their own
(tests/support/launch.py) and functions run in the rank pool."""

from __future__ import annotations

import json
import os

import torch

# argv: rank, field ("rankSize" or "rankRoot"), bootstrap ("node-local" or "store"). Rank 1 disagrees with
# rank 0 on `field`; prints {"error", "seconds"}.
CREATION_DISAGREEMENT = """
    import json, os, sys, time, torch
    rank, field, bootstrap = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    import atb_ops
    import torch.distributed as dist
    if bootstrap == "store":
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=2)
    size = 3 if (field == "rankSize" and rank == 1) else 2
    root = 1 if (field == "rankRoot" and rank == 1) else 0
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": size, "rankRoot": root, "backend": "shm",
                             "commDomain": os.environ["DOMAIN"]}))
    start = time.time()
    try:
        op.execute([torch.ones(4)])
        print(json.dumps({"error": "", "seconds": time.time() - start}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0], "seconds": time.time() - start}))
"""

# A parent that starts two 2-rank jobs at once (argv[1] "1": each job with an ATB_OPS_JOB_ID of its own), all
# four children with the same command line, and prints [{job, rank, exit, report}] as JSON.
TWO_JOBS_PARENT = """
import json, os, subprocess, sys, textwrap, uuid
code = textwrap.dedent(@ALLTOALL@)
with_ids = sys.argv[1] == "1"
children = []
for job in (1, 2):
    env = dict(os.environ)
    if with_ids:
        env["ATB_OPS_JOB_ID"] = uuid.uuid4().hex
    for rank in (0, 1):
        p = subprocess.Popen([sys.executable, "-c", code, str(rank), "2", str(job)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        children.append((job, rank, p))
result = []
for job, rank, p in children:
    out, err = p.communicate(timeout=150)
    lines = out.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {}
    result.append({"job": job, "rank": rank, "pid": p.pid, "exit": p.returncode, "report": report,
                   "stderr": err[-1500:]})
print(json.dumps(result))
"""

# argv: rank. Rank 1 starts 4 s late (after rank 0's first 3 s attempt timed out); both retry creating the
# communicator until it works; prints {"wrong", "attempts"}.
RETRY_CREATION = """
    import json, os, sys, time, torch, atb_ops
    rank = int(sys.argv[1])
    if rank == 1:
        time.sleep(4)
    for attempt in range(1, 11):
        op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm", "commDomain": os.environ["DOMAIN"]}))
        try:
            out = op.execute([torch.full((4,), float(rank))])[0]
            break
        except RuntimeError as e:
            assert "ERROR_COMM_TIMEOUT" in str(e), e
    want = torch.stack([torch.zeros(4), torch.ones(4)])
    print(json.dumps({"wrong": int((out != want).sum()), "attempts": attempt}))
"""

# argv: shm folder. Runs _ALLTOALL's 2 ranks with ATB_OPS_SHM_DIR there; prints [{exit, seconds, report}].
FULL_TMPFS_PARENT = """
import json, os, subprocess, sys, textwrap, time
code = textwrap.dedent(@ALLTOALL@)
env = dict(os.environ, ATB_OPS_SHM_DIR=sys.argv[1], DOMAIN="full-tmpfs")
start = time.time()
late = sys.argv[2] == "late"
go = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go")
# "late": rank 1 starts with rank 0 but reaches the rendezvous only once rank 0 has failed and exited (a slow
# import under load).
hold = "import os, time\\nwhile not os.path.exists(%r): time.sleep(0.05)\\n" % go
procs = [subprocess.Popen([sys.executable, "-c", (hold if late and r == 1 else "") + code, str(r), "2", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for r in range(2)]
if late:
    procs[0].wait(timeout=100)
    open(go, "w").close()
result = []
for p in procs:
    out, err = p.communicate(timeout=100)
    lines = out.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {"error": "", "stderr": err[-2000:]}
    result.append({"exit": p.returncode, "seconds": time.time() - start, "report": report})
print(json.dumps(result))
"""

# argv: rank. WHERE=creation: rank 0 of 2 creates a communicator alone (its peer never starts). WHERE=collective:
# both create it, then rank 0 calls an AllGather that rank 1 never joins. Rank 0 prints "waiting" first.
WAIT_FOREVER = """
    import json, os, signal, sys, threading, time, torch, atb_ops
    # Python keeps SIGINT ignored when it starts with it ignored (a test run started in the background, `cmd &`);
    # a program at a terminal has the KeyboardInterrupt handler, which is what this rank stands for.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rank = int(sys.argv[1])
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": os.environ["BACKEND"],
                             "commDomain": os.environ["DOMAIN"]}))
    if os.environ["WHERE"] == "collective":
        op.execute([torch.ones(4)])
        if rank == 1:
            time.sleep(60)
            sys.exit(0)
    print("waiting", flush=True)
    op.execute([torch.ones(4)])
"""

# argv: rank. A gloo communicator, one AllReduce, and the interpreter's normal exit.
SHORT_GLOO_JOB = """
    import json, sys, torch, atb_ops
    rank = int(sys.argv[1])
    op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "gloo", "allReduceType": "sum"}))
    out = op.execute([torch.full((16,), float(rank + 1))])[0]
    assert torch.equal(out, torch.full((16,), 3.0)), out
    print("ok")
"""


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def gloo_ops_come_and_go(rank: int, world_size: int, count: int) -> dict:
    """`count` gloo operations, each on a commDomain of its own, created, used and deleted."""
    import gc

    def one(i: int) -> None:
        op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "gloo", "allReduceType": "sum",
                                 "commDomain": f"leak-{i}"}))
        out = op.execute([torch.ones(8)])[0]
        assert torch.equal(out, torch.full((8,), float(world_size)))

    one(-1)  # the first gloo group ever made also sets up what every later one shares
    gc.collect()
    before = (_fds(), _threads())
    for i in range(count):
        one(i)
    gc.collect()
    return {"fds_before": before[0], "threads_before": before[1], "fds_after": _fds(), "threads_after": _threads()}


def _rss_shmem_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssShmem:"):
                return int(line.split()[1]) / 1024
    return 0.0


def large_outputs_are_freed(rank: int, world_size: int, domain: str) -> dict:
    """Four 32 MiB outputs in the arena (atb_ops.shm_empty), each filled by an AllGather of 4 Mi float32 from
    each of 2 ranks, held, then dropped; and whether execute() made its own 32 MiB output ordinary memory."""
    import gc

    import atb_ops

    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "shm", "commDomain": domain}))
    x = torch.full((4 << 20,), float(rank))
    op.execute([torch.ones(4)])  # the communicator is up
    gc.collect()
    before = _rss_shmem_mib()
    outs = [atb_ops.shm_empty(world_size, 4 << 20) for _ in range(4)]
    for out in outs:
        op.execute_out([x], [out])
    del out
    correct = all(atb_ops.shm_is_shared(o) and bool((o[r] == r).all()) for o in outs for r in range(world_size))
    held = _rss_shmem_mib()
    del outs
    gc.collect()
    op.execute([torch.ones(4)])  # the peer dropped its outputs too (it may have written into ours)
    fresh = op.execute([x])[0]
    return {"correct": correct and bool((fresh[rank] == rank).all()), "before_mib": before,
            "held_mib": held - before, "after_mib": _rss_shmem_mib(), "fresh_shared": atb_ops.shm_is_shared(fresh)}


def arena_output_as_out(rank: int, world_size: int) -> bool:
    """An AllGather output from the arena is the out= of torch.add with another shape (torch resizes it)."""
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": world_size, "backend": "shm", "commDomain": "resize-out"}))
    y = op.execute([torch.full((1 << 15,), float(rank))])[0]  # 256 KiB: an arena tensor
    import atb_ops

    shared = atb_ops.shm_is_shared(y)
    a = torch.arange(3 << 16, dtype=torch.float32)
    torch.add(a, 1.0, out=y)  # a different numel: y's storage is resized
    ok = shared and y.shape == a.shape and torch.equal(y, a + 1)
    y.resize_(10)
    y.fill_(2.0)
    return bool(ok and torch.equal(y, torch.full((10,), 2.0)))


# argv: rank, size. 20 AllGathers of 1 MiB per rank on backend gloo (ATB_OPS_JOB_ID scopes them); every rank but 0
# sleeps 250-290 ms before each, so rank 0 waits more than one 200 ms slice of a gloo wait each time. Prints
# {"ok": calls right} or {"error", "call"}.
SKEWED_GLOO_CALLS = """
    import json, random, sys, time, torch, atb_ops
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": size, "backend": "gloo", "commDomain": "skewed"}))
    x = torch.full((262144,), float(rank + 1))
    want = torch.arange(1, size + 1, dtype=torch.float32).repeat_interleave(262144).view(size, 262144)
    rng = random.Random(1234 + rank)
    ok = 0
    for call in range(20):
        if rank:
            time.sleep(rng.uniform(0.25, 0.29))
        try:
            (out,) = op.execute([x])
        except RuntimeError as e:
            print(json.dumps({"error": str(e).splitlines()[0], "call": call}))
            sys.exit(0)
        ok += bool(torch.equal(out, want))
    print(json.dumps({"ok": ok}))
"""
