"""Rank programs for tests/reliability/test_membership.py: who forms a communicator (issue 38). Each is a snippet run
in a fresh interpreter (tests/support/launch.py), printing one JSON line that the test checks against an independent
golden."""

from __future__ import annotations

# argv: rank, size, job tag (a number, or a word: alpha, beta, gamma). One AllToAllVV2 of equal splits whose every
# element names (job, source rank, index); prints {"wrong", "tags"} or {"error"}. ROOT, BACKEND and DOMAIN from the
# environment; IMPORT_LATE=1: atb_ops (and torch) are imported only once GO_DIR's file appears.
ALLTOALL_BY_WORD = """
    import json, os, sys, time
    if not os.environ.get("IMPORT_LATE"):
        import torch, atb_ops
    rank, size, word = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if os.environ.get("GO_DIR"):  # a rank that loads its model first: it creates when its file appears
        while not os.path.exists(os.path.join(os.environ["GO_DIR"], f"{word}.{rank}")):
            time.sleep(0.05)
    import torch, atb_ops
    tag = {"alpha": 1.0, "beta": 2.0, "gamma": 3.0}.get(word) or float(word)
    op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    op.set_param(json.dumps({"rank": rank, "rankSize": size, "rankRoot": int(os.environ.get("ROOT", "0")),
                             "backend": os.environ.get("BACKEND", "shm"), "commDomain": os.environ.get("DOMAIN", "")}))
    n = 8
    x = torch.arange(n * size, dtype=torch.float64) + 1000 * rank + 1e6 * tag
    c = torch.full((size,), n, dtype=torch.int64)
    d = torch.arange(size, dtype=torch.int64) * n
    try:
        out = op.execute([x, c, d, c, d, torch.empty(n * size)])[0].reshape(-1)
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    want = torch.cat([torch.arange(rank * n, (rank + 1) * n, dtype=torch.float64) + 1000 * j + 1e6 * tag
                      for j in range(size)])
    print(json.dumps({"wrong": int((out != want).sum()), "tags": sorted({int(v // 1e6) for v in out.tolist()})}))
"""

# argv: process index, size, word (unused). One job, no job id: an AllGather as rank p, dropped, then one with the
# ranks swapped (process p is now rank size-1-p); prints {"wrong"} or {"error"}.
RENUMBERED = """
    import json, sys, torch, atb_ops
    p, size = int(sys.argv[1]), int(sys.argv[2])

    def gather(rank, tag):
        op = atb_ops.Operation("AllGatherOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": size, "backend": "shm"}))
        (out,) = op.execute([torch.full((2,), float(tag * 100 + rank))])
        return int((out != torch.stack([torch.full((2,), float(tag * 100 + r)) for r in range(size)])).sum())

    try:
        wrong = gather(p, 1)
        wrong += gather(size - 1 - p, 2)
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    print(json.dumps({"wrong": wrong}))
"""

# argv: rank, job word, rank table path. HCCL's C API through ctypes: HcclCommInitClusterInfo on the table, then
# an HcclAllGather of 4 floats naming (job, rank); prints {"wrong", "tags"} or {"error"}.
HCCL_TABLE_ALLGATHER = """
    import ctypes, json, sys
    from tests.support.hccl_ctypes import HCCL_DATA_TYPE_FP32, check, hccl
    rank, word, table = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    tag = {"alpha": 1, "beta": 2}[word]
    lib = hccl()
    comm = ctypes.c_void_p()
    check(lib, lib.HcclCommInitClusterInfo(table.encode(), ctypes.c_uint32(rank), ctypes.byref(comm)),
          "HcclCommInitClusterInfo")
    send = (ctypes.c_float * 4)(*[tag * 100 + rank * 10 + i for i in range(4)])
    recv = (ctypes.c_float * 8)()
    check(lib, lib.HcclAllGather(send, recv, ctypes.c_uint64(4), ctypes.c_int(HCCL_DATA_TYPE_FP32), comm, None),
          "HcclAllGather")
    want = [tag * 100 + r * 10 + i for r in range(2) for i in range(4)]
    got = list(recv)
    lib.HcclCommDestroy(comm)
    print(json.dumps({"wrong": sum(a != b for a, b in zip(got, want)), "tags": sorted({int(v // 100) for v in got})}))
"""

# argv: mode (at-once|apart|late), program, then pairs of (word, rank) children to start. A parent that imports
# nothing of atb_ops starts the children (no job id, no MASTER_*), the first half, then (apart) 0.5 s later the rest.
# late: all at once, and once they are older than the census's settle time (job_census.cpp), it lets them create in
# the order given, 1.5 s apart (files in GO_DIR). Prints [{word, rank, exit, report, stderr}].
TWO_JOBS_PARENT = """
import json, os, subprocess, sys, time
mode, program, extra = sys.argv[1], sys.argv[2], sys.argv[3]
children = [c.split(":") for c in sys.argv[4:]]
procs = []
for i, (word, rank) in enumerate(children):
    if mode == "apart" and i == len(children) // 2:
        time.sleep(0.5)
    args = [rank, "2", word] if extra == "-" else [rank, word, extra]
    procs.append((word, rank, subprocess.Popen([sys.executable, "-c", program, *args], stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True)))
if mode == "late":
    time.sleep(12)
    for word, rank in children:
        open(os.path.join(os.environ["GO_DIR"], f"{word}.{rank}"), "w").close()
        time.sleep(1.5)
result = []
for word, rank, p in procs:
    out, err = p.communicate(timeout=200)
    lines = out.strip().splitlines()
    result.append({"word": word, "rank": int(rank), "exit": p.returncode,
                   "report": json.loads(lines[-1]) if lines else {}, "stderr": err[-1500:]})
print(json.dumps(result))
"""

# argv: rank, commDomain, size[, backend (shm)]. An AllGather in its own commDomain; prints {"wrong"} or {"error"}.
ALLGATHER_IN_DOMAIN = """
    import json, sys, torch, atb_ops
    rank, domain, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    backend = sys.argv[4] if len(sys.argv) > 4 else "shm"
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": size, "backend": backend, "commDomain": domain}))
    salt = sum(map(ord, domain))
    try:
        out = op.execute([torch.full((3,), float(salt * 10 + rank))])[0]
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    want = torch.stack([torch.full((3,), float(salt * 10 + r)) for r in range(size)])
    print(json.dumps({"wrong": int((out != want).sum())}))
"""

# argv: "idle" (imports atb_ops, sleeps longer than the test's ATB_OPS_TIMEOUT, never creates), or rank, then
# rankSize: a 2-rank AllGather (shm, no job id). Prints {"wrong"}, or {"error", "seconds"} (from the import on).
IDLE_OR_ALLGATHER = """
    import json, sys, time, torch, atb_ops
    began = time.monotonic()
    if sys.argv[1] == "idle":
        time.sleep(float(sys.argv[2]))
        print(json.dumps({"wrong": 0}))
        sys.exit(0)
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": size, "backend": "shm"}))
    try:
        out = op.execute([torch.full((3,), float(rank))])[0]
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0], "seconds": time.monotonic() - began}))
        sys.exit(0)
    print(json.dumps({"wrong": int((out != torch.arange(size).repeat_interleave(3).view(size, 3)).sum())}))
"""

# argv: role (rank|idle), value. A rank makes a 1-rank AllReduce (shm, no commDomain, no job id) and checks 20 calls
# of `value`; an idle process imports atb_ops and never makes a communicator. Prints {"wrong"} or {"error"}.
SINGLE_RANK = """
    import json, sys, time, torch, atb_ops
    role, value = sys.argv[1], float(sys.argv[2])
    if role == "idle":  # longer than the test's ATB_OPS_TIMEOUT
        time.sleep(12)
        print(json.dumps({"wrong": 0}))
        sys.exit(0)
    op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    op.set_param(json.dumps({"rank": 0, "rankSize": 1, "backend": "shm", "allReduceType": "sum"}))
    try:
        wrong = sum(int((op.execute([torch.full((8,), value)])[0] != value).sum()) for _ in range(20))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    print(json.dumps({"wrong": wrong}))
"""

# argv: program, then one word per child, its arguments joined by ":" ("rank:1", "0:tp0:2"): a parent (importing
# nothing of atb_ops, no job id) starts the children at once. Prints [{exit, report, stderr}].
SIBLINGS_PARENT = """
import json, subprocess, sys
program = sys.argv[1]
children = [a.split(":") for a in sys.argv[2:]]
procs = [subprocess.Popen([sys.executable, "-c", program, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) for args in children]
result = []
for p in procs:
    out, err = p.communicate(timeout=200)
    lines = out.strip().splitlines()
    result.append({"exit": p.returncode, "report": json.loads(lines[-1]) if lines else {}, "stderr": err[-1500:]})
print(json.dumps(result))
"""

# argv: 1 to import atb_ops in the parent (its spawn hook then gives the children a job id), 0 not to. A spawn-
# context Manager runs beside a 2-rank torch.multiprocessing.spawn (the Manager is a child of the parent too).
SPAWN_WITH_MANAGER_PARENT = """
import json, multiprocessing, sys, time


def rank_main(rank, results):
    import torch, atb_ops
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm"}))
    out = op.execute([torch.full((2,), float(rank + 1))])[0]
    results[rank] = out.reshape(-1).tolist()


if __name__ == "__main__":
    if sys.argv[1] == "1":
        import atb_ops  # noqa: F401
    import torch.multiprocessing as mp
    began = time.monotonic()
    with multiprocessing.get_context("spawn").Manager() as manager:
        results = manager.dict()
        mp.spawn(rank_main, args=(results,), nprocs=2)
        print(json.dumps({"results": dict(results), "seconds": time.monotonic() - began}))
"""

# argv: start method (fork|spawn). A parent that imports atb_ops runs a Manager and two multiprocessing.Process
# ranks (no job id: multiprocessing hands none, unlike torch's spawn); the Manager has atb_ops loaded too.
PROCESSES_WITH_MANAGER_PARENT = """
import json, multiprocessing, sys, time
import torch
import atb_ops  # noqa: F401


def rank_main(rank, results):
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm"}))
    try:
        results[rank] = op.execute([torch.full((2,), float(rank + 1))])[0].reshape(-1).tolist()
    except RuntimeError as e:
        results[rank] = str(e).splitlines()[0]


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    began = time.monotonic()
    with ctx.Manager() as manager:
        results = manager.dict()
        ranks = [ctx.Process(target=rank_main, args=(r, results)) for r in range(2)]
        for p in ranks:
            p.start()
        for p in ranks:
            p.join(120)
        print(json.dumps({"results": dict(results), "exits": [p.exitcode for p in ranks],
                          "seconds": time.monotonic() - began}))
"""

# argv: rank; BACKEND from the environment (shm). Identical code on both ranks: an operation held in a reference
# cycle is dropped and re-made; only rank 1's garbage collector runs in between. Prints {"wrong", "seconds"} or
# {"error"}.
CYCLE_REMADE = """
    import gc, json, os, sys, time, torch, atb_ops
    gc.disable()
    rank = int(sys.argv[1])

    def make():
        op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": os.environ.get("BACKEND", "shm"),
                                 "commDomain": "cycle"}))
        return op

    def check(op, value):
        out = op.execute([torch.full((4,), float(value + rank))])[0]
        return int((out != torch.stack([torch.full((4,), float(value + r)) for r in range(2)])).sum())

    holder = {"op": make()}
    holder["self"] = holder  # a cycle: only the collector frees it
    wrong = check(holder["op"], 10)
    del holder
    if rank == 1:
        gc.collect()  # this rank's communicator goes now; rank 0's lives on in the cycle
    began = time.monotonic()
    try:
        wrong += check(make(), 20)
        wrong += check(make(), 30)  # and the next one shares it again
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    print(json.dumps({"wrong": wrong, "seconds": time.monotonic() - began}))
"""

# argv: rank; WORLD from the environment. Backend gloo meeting node-locally: rank 0 keeps its operation (and so its
# communicator), every other rank drops theirs, then all make a new one with the same param and call it. Prints
# {"sum", "seconds"} or {"error", "seconds"}.
KEPT_BY_ONE_RANK = """
    import gc, json, os, sys, time, torch, atb_ops
    rank, world = int(sys.argv[1]), int(os.environ["WORLD"])

    def make():
        op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": world, "backend": "gloo"}))
        return op

    first = make()
    first.execute([torch.ones(3)])
    if rank != 0:
        del first
        gc.collect()
    began = time.monotonic()
    try:
        out = make().execute([torch.full((3,), float(rank + 1))])[0]
        print(json.dumps({"sum": out.tolist(), "seconds": time.monotonic() - began}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0], "seconds": time.monotonic() - began}))
"""

# argv: rank, role (survivor|victim|replacement). The survivor runs a collective with the victim, the victim
# dies (os._exit) before the second; the survivor gets the peer's death, makes a new operation (README's recovery)
# and meets a fresh process for rank 1. Prints {"wrong", "first_error"} or {"error"}.
REPLACED_RANK = """
    import json, os, sys, time, torch, atb_ops
    rank, role = int(sys.argv[1]), sys.argv[2]

    def make():
        op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm", "commDomain": "replaced"}))
        return op

    def check(op, value):
        out = op.execute([torch.full((5,), float(value + rank))])[0]
        return int((out != torch.full((5,), float(2 * value + 1))).sum())

    if role == "replacement":
        print(json.dumps({"wrong": check(make(), 40)}))
        sys.exit(0)
    op = make()
    wrong = check(op, 10)
    if role == "victim":
        sys.stdout.flush()
        os._exit(0)  # gone without releasing anything
    first_error = ""
    try:
        check(op, 20)
    except RuntimeError as e:
        first_error = str(e).splitlines()[0]
    print(json.dumps({"stage": "lost"}), flush=True)
    wrong += check(make(), 40)
    print(json.dumps({"wrong": wrong, "first_error": first_error}))
"""

# argv: rank, role, port. The same through torch.distributed's backend "atb_ops": the survivor (rank 0, which
# hosts the store) re-initialises the group after the victim's death and meets its replacement.
REPLACED_RANK_C10D = """
    import datetime, json, os, sys, torch, torch.distributed as dist, atb_ops
    rank, role, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)

    def init():
        dist.init_process_group("atb_ops", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60))

    def check(value):
        t = torch.full((5,), float(value + rank))
        dist.all_reduce(t)
        return int((t != torch.full((5,), float(2 * value + 1))).sum())

    init()
    if role == "replacement":
        print(json.dumps({"wrong": check(40)}))
        dist.destroy_process_group()
        sys.exit(0)
    wrong = check(10)
    if role == "victim":
        sys.stdout.flush()
        os._exit(0)
    first_error = ""
    try:
        check(20)
    except Exception as e:  # DistBackendError
        first_error = str(e).splitlines()[0]
    dist.destroy_process_group()
    print(json.dumps({"stage": "lost"}), flush=True)
    init()
    wrong += check(40)
    dist.destroy_process_group()
    print(json.dumps({"wrong": wrong, "first_error": first_error}))
"""

# argv: rank, swap-with-clear (0|1), dir. A gloo group, atb_ops.distributed.all_gather, destroy_process_group, a
# new default group with the ranks swapped; each all_gather compared with torch's own.
REMADE_GROUP = """
    import json, os, sys, torch, torch.distributed as dist, atb_ops
    from atb_ops import distributed as ad
    first, clear, folder = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
    results = []
    for round_, rank in enumerate((first, 1 - first)):
        store = dist.FileStore(os.path.join(folder, f"store{round_}"), 2)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
        x = torch.full((2,), float(rank + 1))
        ours = ad.all_gather(x)
        theirs = torch.empty(4)
        dist.all_gather_into_tensor(theirs, x)
        results.append({"ours": ours.reshape(-1).tolist(), "torch": theirs.tolist()})
        dist.destroy_process_group()
        if clear:
            atb_ops.clear_communicators()
    print(json.dumps(results))
"""

# argv: rank. Env: BACKEND. Both ranks make an AllGather (commDomain "gave-up") and call it once; rank 1 then calls
# it alone and times out (ATB_OPS_TIMEOUT) while rank 0 sleeps past that; then each makes a new operation with the
# same param three times and gathers 100 * i + rank. Prints {"alone": error or None, "got": [[...], ...]}.
GAVE_UP_THEN_NEW_OPERATIONS = """
    import json, os, sys, time, torch, atb_ops
    rank = int(sys.argv[1])
    param = json.dumps({"rank": rank, "rankSize": 2, "backend": os.environ["BACKEND"], "commDomain": "gave-up"})
    def make():
        op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
        op.set_param(param)
        return op
    first = make()
    first.execute([torch.ones(1)])
    alone = None
    if rank == 1:
        try:
            first.execute([torch.ones(1)])
        except RuntimeError as e:
            alone = str(e).splitlines()[0]
    else:
        # Past rank 1's giving up, well before its first new operation's creation would time out.
        time.sleep(float(os.environ["ATB_OPS_TIMEOUT"]) + 1.5)
    got = []
    for i in range(3):
        try:
            got.append(make().execute([torch.tensor([100.0 * i + rank])])[0].reshape(-1).tolist())
        except RuntimeError as e:
            got.append(str(e).splitlines()[0])
    print(json.dumps({"alone": alone, "got": got}))
"""

# argv: rank, setting value, variable. Both ranks make one group collective (CPU) or ATB operation (HCCL, shm) with
# the variable set to their own value; prints {"error", "seconds"} or {"ok"}.
SETTING_DIFFERS = """
    import json, os, sys, time, torch
    rank, value, variable = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ[variable] = value
    import atb_ops
    began = time.monotonic()
    try:
        if variable in ("ATB_OPS_CPU_PATH", "ATB_OPS_GLOO_STREAMS", "ATB_OPS_SHM_DIR"):
            import torch.distributed as dist
            from atb_ops import distributed as ad
            dist.init_process_group("gloo", init_method="file://" + os.environ["STORE_FILE"], rank=rank, world_size=2)
            if variable == "ATB_OPS_CPU_PATH":
                ad.all_gather(torch.ones(2))
            elif variable == "ATB_OPS_SHM_DIR":  # the shm path of atb_ops.distributed, met through the store
                c, d = torch.tensor([1, 1]), torch.tensor([0, 1])
                ad.all_to_all_v(torch.zeros(2), c, d, c, d)
            else:  # a gloo communicator of atb_ops' own: its connections are agreed when it is made
                op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
                op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "gloo", "commDomain": "setting"}))
                op.execute([torch.ones(2)])
        else:
            backend = "shm"
            if variable == "ATB_OPS_HCCL_ALLTOALLV":
                import torch_npu  # noqa: F401  the emulation's: backend "hccl" is HCCL's C API on CPU ranks
                assert "hccl (cpu)" in atb_ops.backends(), atb_ops.backends()
                backend = "hccl"
            op = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
            op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": backend, "commDomain": "setting"}))
            c = torch.tensor([1, 1])
            d = torch.tensor([0, 1])
            op.execute([torch.zeros(2), c, d, c, d, torch.empty(2)])
        print(json.dumps({"ok": True, "seconds": time.monotonic() - began}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0], "seconds": time.monotonic() - began}))
    if variable in ("ATB_OPS_CPU_PATH", "ATB_OPS_GLOO_STREAMS", "ATB_OPS_SHM_DIR"):
        dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)  # torch's gloo group can abort in its static teardown ("terminate called without an active exception")
"""

# argv: rank. Several collectives with ordinary tensors (peers read them in place where the kernel lets them) and
# execute() outputs; prints {"wrong", "stats"} or {"error"}.
PTRACE_RESTRICTED = """
    import json, os, sys, torch, atb_ops
    rank = int(sys.argv[1])
    domain = "ptrace"

    def op(name, **extra):
        o = torch.classes.OperationTorch.OperationTorch(name)
        o.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": "shm", "commDomain": domain, **extra}))
        return o

    wrong = 0
    try:
        n = 2 * 1024 * 1024  # 16 MiB of float64 per rank: 8 MiB to each peer, read in place
        a2a = op("AllToAllVV2Operation")
        c = torch.tensor([n // 2, n // 2])
        d = torch.tensor([0, n // 2])
        for it in range(2):
            x = torch.arange(n, dtype=torch.float64) + 1e7 * rank + 3e7 * it
            want = torch.cat([torch.arange(rank * n // 2, (rank + 1) * n // 2, dtype=torch.float64) + 1e7 * j + 3e7 * it
                              for j in range(2)]).reshape(1, -1)
            out = torch.full((1, n), -1.0, dtype=torch.float64)
            a2a.execute_out([x, c, d, c, d, torch.empty(n)], [out])
            wrong += int((out != want).sum())
            (fresh,) = a2a.execute([x, c, d, c, d, torch.empty(n)])
            wrong += int((fresh != want).sum())
        m = 300_000
        (gathered,) = op("AllGatherOperation").execute([torch.arange(m, dtype=torch.float32) + rank])
        wrong += int((gathered != torch.stack([torch.arange(m, dtype=torch.float32) + r for r in range(2)])).sum())
        b = torch.arange(m, dtype=torch.float32) * (rank + 1)
        op("BroadcastOperation", rankRoot=1).execute([b])
        wrong += int((b != torch.arange(m, dtype=torch.float32) * 2).sum())
        if rank == 0:
            op("SendOperation", destRank=1).execute([torch.arange(m, dtype=torch.float32) + 5])
        else:
            (got,) = op("RecvOperation", srcRank=0).execute([torch.empty(m)])
            wrong += int((got != torch.arange(m, dtype=torch.float32) + 5).sum())
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    (stats,) = atb_ops._C.communicator_stats(domain)
    print(json.dumps({"wrong": wrong, "stats": stats}))
"""

# argv: rank, role (root|other). The root is killed while it waits in creation for a peer that never comes.
LONELY_CREATION = """
    import json, sys, torch, atb_ops
    rank = int(sys.argv[1])
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank, "rankSize": 8, "backend": "shm", "commDomain": "killed-root"}))
    print("waiting", flush=True)
    op.execute([torch.ones(2)])
"""

# argv: rank, port. 4 ranks started like torchrun's (MASTER_ADDR/PORT, RANK, WORLD_SIZE), nothing initialised: each
# rank's first gloo communicator is a 2-rank sub-communicator (commDomain sub0: ranks 0-1, sub1: ranks 2-3).
GLOO_SUBCOMMUNICATOR_FIRST = """
    import json, os, sys, torch, atb_ops
    rank, port = int(sys.argv[1]), sys.argv[2]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE="4")
    op = torch.classes.OperationTorch.OperationTorch("AllGatherOperation")
    op.set_param(json.dumps({"rank": rank % 2, "rankSize": 2, "backend": "gloo", "commDomain": f"sub{rank // 2}"}))
    out = op.execute([torch.full((3,), float(rank))])[0]
    want = torch.stack([torch.full((3,), float(rank // 2 * 2 + r)) for r in range(2)])
    print(json.dumps({"wrong": int((out != want).sum())}))
"""

# argv: rank, store file. On backend "atb_ops", rank 0 calls reduce_scatter_tensor and rank 1 reduce_scatter (the
# list form) with the same sizes: two calls whose labels share their first 31 characters.
LABELS_SHARING_A_PREFIX = """
    import datetime, json, sys, torch, torch.distributed as dist, atb_ops
    rank, store = int(sys.argv[1]), sys.argv[2]
    dist.init_process_group("atb_ops", init_method="file://" + store, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    out = torch.empty(4)
    try:
        if rank == 0:
            dist.reduce_scatter_tensor(out, torch.ones(8))
        else:
            dist.reduce_scatter(out, [torch.ones(4), torch.ones(4)])
        print(json.dumps({"ok": out.tolist()}))
    except Exception as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
    dist.destroy_process_group()
"""

# argv: rank. Rank 0 keeps one operation for every call; rank 1 makes a new one for each call and drops the last
# (as ATB's send/recv test does per dtype): Send/Recv and AllGather, three rounds. Prints {"wrong"} or {"error"}.
REMADE_EACH_CALL = """
    import json, os, sys, torch
    if os.environ.get("EMULATE") == "1":
        import torch_npu  # noqa: F401  backend "hccl": HCCL's C API on CPU ranks
    import atb_ops
    rank = int(sys.argv[1])
    backend = os.environ.get("BACKEND", "shm")

    def make(name, **extra):
        op = torch.classes.OperationTorch.OperationTorch(name)
        op.set_param(json.dumps({"rank": rank, "rankSize": 2, "backend": backend, "commDomain": "remade", **extra}))
        return op

    wrong = 0
    kept = {}
    try:
        for round_, dtype in enumerate((torch.float32, torch.int32, torch.float16)):
            value = torch.arange(6).to(dtype) + 10 * round_
            if rank == 0:
                send = kept.setdefault("send", make("SendOperation", destRank=1))
                send.execute([value])
                gather = kept.setdefault("gather", make("AllGatherOperation"))
            else:
                (got,) = make("RecvOperation", srcRank=0).execute([torch.empty(6, dtype=dtype)])
                wrong += int((got != value).sum())
                gather = make("AllGatherOperation")
            (g,) = gather.execute([value + rank])
            wrong += int((g != torch.stack([value, value + 1])).sum())
            del gather
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    print(json.dumps({"wrong": wrong}))
"""

# argv: rank, how rank 1 goes ("released": it drops its only operation and stays; "exits": its process ends).
# Three ranks all-gather once on one communicator; then rank 1 goes while rank 0 waits for a message that rank 2
# sends a second later. Prints {"wrong"} (rank 0 counts the values that did not arrive) or {"error"}.
PEER_GOES_WHILE_ANOTHER_IS_AWAITED = """
    import gc, json, sys, time, torch, atb_ops
    rank, how = int(sys.argv[1]), sys.argv[2]

    def make(name, **extra):
        op = torch.classes.OperationTorch.OperationTorch(name)
        op.set_param(json.dumps({"rank": rank, "rankSize": 3, "backend": "shm", "commDomain": "goes", **extra}))
        return op

    try:
        gather = make("AllGatherOperation")
        (g,) = gather.execute([torch.full((4,), float(rank))])
        wrong = int((g.reshape(3, 4) != torch.arange(3.0).reshape(3, 1)).sum())
        message = torch.arange(64, dtype=torch.float32) * 3
        if rank == 0:
            (got,) = make("RecvOperation", srcRank=2).execute([torch.empty(64)])
            wrong += int((got != message).sum())
        elif rank == 2:
            time.sleep(1.0)
            make("SendOperation", destRank=0).execute([message])
            time.sleep(0.5)  # the receiver reads the message where it lies
        elif how == "released":
            del gather
            gc.collect()
            time.sleep(2.0)
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
        sys.exit(0)
    print(json.dumps({"wrong": wrong}))
"""


# A torchrun worker (RANK = its tag) that runs a 2-process job of its own with torch.multiprocessing.spawn: the
# children inherit torchrun's variables (its agent's store), yet are ranks of their worker's job only. Each child
# waits for START_AT (so every worker's children create at once), then makes ROUNDS AllReduces on commDomain "77"
# (backend from B). Prints "REPORT {rank, children: [{child, wrong, error?}]}".
SPAWN_IN_TORCHRUN_WORKER = """
import json, os, time
import torch, torch.multiprocessing as mp


def child(i, tag, queue):
    import atb_ops  # noqa: F401
    time.sleep(max(0.0, float(os.environ["START_AT"]) - time.time()))
    report = {"child": i, "wrong": 0}
    try:
        for _ in range(int(os.environ["ROUNDS"])):
            op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
            op.set_param(json.dumps({"rank": i, "rankSize": 2, "backend": os.environ["B"], "commDomain": "77"}))
            got = torch.full((4,), -777.0)
            op.execute_out([torch.full((4,), float(1000 * tag + i))], [got])
            report["wrong"] += int((got != float(2000 * tag + 1)).sum())
    except RuntimeError as e:
        report["error"] = str(e).splitlines()[0]
    queue.put(report)


if __name__ == "__main__":
    import atb_ops  # noqa: F401  (the parent's spawn calls give each job an id of its own)
    tag = int(os.environ["RANK"])
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(child, args=(tag, queue), nprocs=2, join=True)
    print("REPORT", json.dumps({"rank": tag, "children": sorted((queue.get() for _ in range(2)),
                                                                key=lambda c: c["child"])}), flush=True)
"""
