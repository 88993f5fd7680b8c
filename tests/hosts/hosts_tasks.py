"""Rank programs for tests/hosts/test_several_hosts.py: each runs in a fresh interpreter inside an emulated host and
prints one JSON line that the test checks against a golden computed there."""

from __future__ import annotations

# The uneven AllToAllVV2 both programs below run, with op() and `wrong` defined: rank r sends (r + j + 1) * scale
# elements to rank j, valued 1000 * r + 100 * j + index; every element against its golden. Scale 1 rides in the
# call's comparison; 3001 moves through the hosts (to another host in one message per host pair); 40_001 (over
# 1 MiB to other hosts) in the group of every rank. "scattered": the chunks lie in the input in reverse rank order
# with gaps, and in the output in reverse rank order.
_UNEVEN_ALLTOALLV = """\
        # In two levels' comparison, the third call of 3001 rides between hosts (the room learned from the two before),
        # and so does the smaller one after it (in part of that room); the next 3001 fills the smaller room the 1500
        # left, and the rest of its chunks between hosts follow it.
        rode = []  # per call, the bytes that came inside its comparison (communicator_stats' eager_bytes)
        for scale, order in ((1, "packed"), (3001, "packed"), (3001, "scattered"), (3001, "scattered"),
                             (1500, "scattered"), (3001, "packed"), (40_001, "scattered")):
            eager_before = sum(c["eager_bytes"] for c in atb_ops._C.communicator_stats(""))
            sc = [(rank + j + 1) * scale for j in range(size)]
            rc = [(i + rank + 1) * scale for i in range(size)]
            if order == "packed":
                sd = [sum(sc[:j]) for j in range(size)]
                rd = [sum(rc[:i]) for i in range(size)]
            else:
                sd = [sum(sc[j + 1:]) + 5 * (size - j) for j in range(size)]
                rd = [sum(rc[i + 1:]) for i in range(size)]
            x = torch.full((max(d + c for d, c in zip(sd, sc)) + 3,), -1.0)
            for j in range(size):
                x[sd[j]:sd[j] + sc[j]] = torch.arange(sc[j], dtype=torch.float32) + 1000 * rank + 100 * j
            counts = [torch.tensor(v, dtype=torch.int64) for v in (sc, sd, rc, rd)]
            (out,) = op("AllToAllVV2Operation").execute([x, *counts, torch.empty(sum(rc))])
            want = torch.empty(sum(rc))
            for i in range(size):
                want[rd[i]:rd[i] + rc[i]] = torch.arange(rc[i], dtype=torch.float32) + 1000 * i + 100 * rank
            wrong += int((out.reshape(-1) != want).sum())
            rode.append(sum(c["eager_bytes"] for c in atb_ops._C.communicator_stats("")) - eager_before)
"""

# argv: rank, size, backend. After init_process_group("gloo") (MASTER_ADDR/MASTER_PORT from the environment), ATB
# operators through OperationTorch: AllToAllVV2 with uneven counts, AllReduce, AllGather; every output against
# its golden. Prints {"wrong", "backend"} or {"error", "seconds"}.
ATB_AFTER_INIT = """
    import datetime, json, os, sys, time, torch, torch.distributed as dist
    rank, size, backend = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if os.environ.get("EMULATE") == "1":
        import torch_npu  # noqa: F401  the emulation's: backend "hccl" is HCCL's C API on CPU ranks
    import atb_ops
    if os.environ.get("INIT", "1") == "1":
        dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))

    kept = []  # the operations live on, so their communicators can be asked which backend they are

    table = {"rankTableFile": os.environ["RANK_TABLE"]} if os.environ.get("RANK_TABLE") else {}

    def op(name, **extra):
        o = torch.classes.OperationTorch.OperationTorch(name)
        o.set_param(json.dumps({"rank": rank, "rankSize": size, "backend": backend, **table, **extra}))
        kept.append(o)
        return o

    began = time.monotonic()
    try:
        wrong = 0
        # <uneven AllToAllVV2>
        (red,) = op("AllReduceOperation").execute([torch.arange(6, dtype=torch.float32) * (rank + 1)])
        wrong += int((red != torch.arange(6, dtype=torch.float32) * sum(range(1, size + 1))).sum())
        (gat,) = op("AllGatherOperation").execute([torch.full((3,), float(rank))])
        wrong += int((gat != torch.stack([torch.full((3,), float(r)) for r in range(size)])).sum())
        used = {c["backend"] for c in atb_ops._C.communicator_stats("")}
        print(json.dumps({"wrong": wrong, "backends": sorted(used), "rode": rode[3:6]}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0], "seconds": time.monotonic() - began}))
    if dist.is_initialized():
        dist.destroy_process_group()
"""
ATB_AFTER_INIT = ATB_AFTER_INIT.replace("        # <uneven AllToAllVV2>\n", _UNEVEN_ALLTOALLV)


# argv: rank, size, root-info file. HCCL's C API through ctypes, no torch.distributed: rank 0 writes
# HcclGetRootInfo's bytes to a file (HCCL's examples broadcast them with MPI), every rank joins with
# HcclCommInitRootInfo, then HcclAllReduce, HcclAllGather and HcclBatchSendRecv (a ring, each rank sending first).
# Prints {"wrong"} or {"error"}.
HCCL_ROOT_INFO = """
    import ctypes, json, os, sys, time
    from tests.support.hccl_ctypes import (HCCL_DATA_TYPE_FP32, HCCL_RECV, HCCL_REDUCE_SUM, HCCL_SEND,
                                           HcclSendRecvItem, check, hccl)
    rank, size, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    lib = hccl()
    info = ctypes.create_string_buffer(4108)
    if rank == 0:
        check(lib, lib.HcclGetRootInfo(info), "HcclGetRootInfo")
        with open(path + ".tmp", "wb") as f:
            f.write(info.raw)
        os.rename(path + ".tmp", path)
    else:
        while not os.path.exists(path):
            time.sleep(0.05)
        with open(path, "rb") as f:
            ctypes.memmove(info, f.read(), 4108)
    comm = ctypes.c_void_p()
    check(lib, lib.HcclCommInitRootInfo(ctypes.c_uint32(size), info, ctypes.c_uint32(rank), ctypes.byref(comm)),
          "HcclCommInitRootInfo")
    fp32, total = ctypes.c_int(HCCL_DATA_TYPE_FP32), ctypes.c_int(HCCL_REDUCE_SUM)
    send = (ctypes.c_float * 5)(*[rank * 10 + i for i in range(5)])
    recv = (ctypes.c_float * 5)()
    check(lib, lib.HcclAllReduce(send, recv, ctypes.c_uint64(5), fp32, total, comm, None), "HcclAllReduce")
    wrong = sum(recv[i] != sum(r * 10 + i for r in range(size)) for i in range(5))
    gathered = (ctypes.c_float * (5 * size))()
    check(lib, lib.HcclAllGather(send, gathered, ctypes.c_uint64(5), fp32, comm, None), "HcclAllGather")
    wrong += sum(gathered[r * 5 + i] != r * 10 + i for r in range(size) for i in range(5))
    # HcclBatchSendRecv around the ring, every rank's send listed first (so each sends before it receives)
    ring = (ctypes.c_float * 5)(*[-1.0] * 5)
    items = (HcclSendRecvItem * 2)(
        HcclSendRecvItem(HCCL_SEND, ctypes.cast(send, ctypes.c_void_p), 5, HCCL_DATA_TYPE_FP32, (rank + 1) % size),
        HcclSendRecvItem(HCCL_RECV, ctypes.cast(ring, ctypes.c_void_p), 5, HCCL_DATA_TYPE_FP32, (rank - 1) % size))
    check(lib, lib.HcclBatchSendRecv(items, ctypes.c_uint32(2), comm, None), "HcclBatchSendRecv")
    wrong += sum(ring[i] != ((rank - 1) % size) * 10 + i for i in range(5))
    lib.HcclCommDestroy(comm)
    print(json.dumps({"wrong": wrong}))
"""

# argv: rank, table. HcclCommInitClusterInfo on a rank table listing two servers, then HcclAllReduce.
HCCL_RANK_TABLE = """
    import ctypes, json, sys
    from tests.support.hccl_ctypes import HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, check, hccl
    rank, table = int(sys.argv[1]), sys.argv[2]
    size = len(json.load(open(table))["server_list"]) * 2
    lib = hccl()
    comm = ctypes.c_void_p()
    check(lib, lib.HcclCommInitClusterInfo(table.encode(), ctypes.c_uint32(rank), ctypes.byref(comm)),
          "HcclCommInitClusterInfo")
    send = (ctypes.c_float * 4)(*[rank + i for i in range(4)])
    recv = (ctypes.c_float * 4)()
    check(lib, lib.HcclAllReduce(send, recv, ctypes.c_uint64(4), ctypes.c_int(HCCL_DATA_TYPE_FP32),
                                 ctypes.c_int(HCCL_REDUCE_SUM), comm, None), "HcclAllReduce")
    lib.HcclCommDestroy(comm)
    print(json.dumps({"wrong": sum(recv[i] != sum(r + i for r in range(size)) for i in range(4))}))
"""

# argv: rank, size. torch.distributed's own collectives on init_process_group("atb_ops") across hosts, each against
# its golden (outputs start as sentinels); prints the count of wrong elements and what moved the data.
C10D_ATB_OPS = """
    import datetime, json, sys, torch, torch.distributed as dist, atb_ops
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("atb_ops", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    wrong = 0

    def count(got, want):
        global wrong
        wrong += int((got != want).sum()) + int(got.shape != want.shape)

    def rows(r, n, salt=0):  # rank r's input: distinct small integers, exact in every dtype here
        return (torch.arange(n, dtype=torch.float64) * 3 + r * 7 + salt) % 11 + 1

    for n in (5, 1 << 20):  # one element per rank and some, and a sharded all-reduce past a host's shm slot
        t = rows(rank, n).float()
        dist.all_reduce(t)
        count(t, sum(rows(r, n) for r in range(size)).float())
        t = rows(rank, n).float()
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        count(t, torch.stack([rows(r, n) for r in range(size)]).amax(0).float())
    out = torch.full((size * 3,), -1.0)
    dist.all_gather_into_tensor(out, rows(rank, 3).float())
    count(out, torch.cat([rows(r, 3) for r in range(size)]).float())
    outs = [torch.full((2,), -1, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(outs, rows(rank, 2).long())
    count(torch.stack(outs), torch.stack([rows(r, 2) for r in range(size)]).long())
    shard = torch.full((4,), -1.0)
    dist.reduce_scatter_tensor(shard, rows(rank, 4 * size).float())
    count(shard, sum(rows(r, 4 * size) for r in range(size))[rank * 4:(rank + 1) * 4].float())
    for root in range(size):
        t = rows(rank, 6, salt=root).to(torch.bfloat16)
        dist.broadcast(t, src=root)
        count(t, rows(root, 6, salt=root).to(torch.bfloat16))
    # all_to_all_single with uneven splits: rank r sends (r + j) % 3 + 1 rows of 2 to rank j
    split = lambda r, j: (r + j) % 3 + 1  # noqa: E731
    send = torch.cat([torch.full((split(rank, j), 2), float(rank * 10 + j)) for j in range(size)])
    recv_rows = [split(j, rank) for j in range(size)]
    recv = torch.full((sum(recv_rows), 2), -1.0)
    dist.all_to_all_single(recv, send, recv_rows, [split(rank, j) for j in range(size)])
    count(recv, torch.cat([torch.full((split(j, rank), 2), float(j * 10 + rank)) for j in range(size)]))
    # a ring by batch_isend_irecv (each rank sends first), then send/recv between rank 0 and the last rank
    got = torch.full((3,), -1.0)
    ops = [dist.P2POp(dist.isend, torch.full((3,), float(rank)), (rank + 1) % size),
           dist.P2POp(dist.irecv, got, (rank - 1) % size)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    count(got, torch.full((3,), float((rank - 1) % size)))
    if rank == 0:
        dist.send(torch.arange(4.0), size - 1)
    elif rank == size - 1:
        t = torch.full((4,), -1.0)
        dist.recv(t, 0)
        count(t, torch.arange(4.0))
    dist.barrier()
    # A ring whose last receive expects 5 elements where 4 come: the two ranks of that transfer raise naming both
    # sizes, at once; the others' transfers complete with their data; the group stays usable.
    import time
    involved = {size - 2, size - 1}
    got = torch.full((4 + (rank == size - 1),), -1.0)
    began = time.monotonic()
    try:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((4,), float(rank)), (rank + 1) % size),
                                         dist.P2POp(dist.irecv, got, (rank - 1) % size)]):
            w.wait()
        batch = "done"
        if rank not in involved:
            count(got, torch.full((4,), float((rank - 1) % size)))
    except RuntimeError as e:
        batch = "expected 5 elements" if "expected 5 elements" in str(e) else str(e).splitlines()[0]
    batch_seconds = time.monotonic() - began
    t = torch.full((3,), 1.0)
    dist.all_reduce(t)
    count(t, torch.full((3,), float(size)))
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    print(json.dumps({"wrong": wrong, "type": type(backend).__name__, "comm": backend.comm_backend,
                      "batch": batch, "fast": batch_seconds < 10}))
    dist.destroy_process_group()
"""

# argv: rank, size, flag file[, elements per call (default 1024)[, surface[, "fresh"]]]. A loop of AllReduce: surface
# "atb" (default) ATB's operator with backend "hccl" after init_process_group("gloo"), so gloo between the hosts;
# "c10d" torch.distributed's all_reduce on init_process_group("atb_ops") (the group's timeout 120 s, ATB_OPS_TIMEOUT
# shorter); "fresh": a new operator for every call (each finds the cached communicator).
# The test takes a host's link down or kills a rank meanwhile. Prints {"error", "seconds"} once a call fails (the
# error as "<exception type>: <first line>"), then (after the link is back, signalled by a file) the result of a fresh
# communicator (a new operation, or a new "atb_ops" group).
LOOP_UNTIL_LOST = """
    import datetime, json, os, sys, time, torch, torch.distributed as dist, atb_ops
    rank, size, flag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    elements = int(sys.argv[4]) if len(sys.argv) > 4 else 1024
    surface = sys.argv[5] if len(sys.argv) > 5 else "atb"
    fresh = len(sys.argv) > 6 and sys.argv[6] == "fresh"
    dist.init_process_group("atb_ops" if surface == "c10d" else "gloo", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=120))

    def make(fresh):
        if surface == "c10d":
            group = dist.new_group(list(range(size)), backend="atb_ops") if fresh else dist.group.WORLD

            def run(x):
                dist.all_reduce(x, group=group)
                return x
            return run
        op = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
        op.set_param(json.dumps({"rank": rank, "rankSize": size, "backend": "hccl", "commDomain": "lossy"}))
        return lambda x: op.execute([x])[0]

    call = make(False)
    if fresh:
        call(torch.ones(elements))  # its communicator stays cached while `call` lives: each fresh operator finds it
    print(json.dumps({"stage": "looping"}), flush=True)
    began = None
    error = ""
    for _ in range(100000):
        try:
            (make(False) if fresh else call)(torch.ones(elements))
        except RuntimeError as e:
            error = type(e).__name__ + ": " + str(e).splitlines()[0]
            break
        if began is None and os.path.exists(flag + ".down"):
            began = time.monotonic()
        time.sleep(0.01)
    lost = time.monotonic() - (began or time.monotonic())
    print(json.dumps({"stage": "lost", "error": error, "seconds": lost}), flush=True)
    while not os.path.exists(flag + ".up"):
        time.sleep(0.05)
    out = make(True)(torch.full((4,), float(rank + 1)))
    print(json.dumps({"wrong": int((out != float(sum(range(1, size + 1)))).sum())}), flush=True)
    os._exit(0)  # the default group lost a peer's sockets: no orderly teardown
"""

# A DDP training step under torchrun on two hosts: the same model and data with backend "atb_ops" and "gloo";
# prints the parameters after one step, which must be equal. argv via environment: BACKEND.
DDP_STEP = """
import json, os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import atb_ops  # noqa: F401  registers backend "atb_ops"

dist.init_process_group(os.environ["BACKEND"])
rank, size = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(100 + rank)
x, y = torch.randn(16, 8, generator=g), torch.randn(16, 3, generator=g)
torch.nn.functional.mse_loss(model(x), y).backward()
opt.step()
params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
if rank == 0:
    with open(os.environ["RESULT"], "w") as f:
        json.dump(params.tolist(), f)
dist.destroy_process_group()
# torch's gloo groups abort now and then in their static teardown under torchrun ("terminate called without an
# active exception", seen with and without atb_ops imported): the step is done, skip the teardown.
os._exit(0)
"""

# argv: rank, size. After init_process_group("gloo"), every collective of ATB's with its default backend "hccl",
# which spans hosts in two levels (shared memory in a host, gloo between hosts) where every host holds the same
# number of ranks: AllReduce (sum below and above the sharded size, odd lengths, bf16, max), AllGather, Broadcast
# from every root, atb_ops.quant's int8 all-reduce, ReduceScatter, AllToAllVV2 with uneven counts; integer values
# (and halves), so every golden is exact.
# Prints {"wrong", "backends"} or {"error"}.
EVERY_COLLECTIVE = """
    import datetime, json, sys, torch, torch.distributed as dist
    import atb_ops, atb_ops.quant
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    kept = []

    def op(name, **extra):
        o = torch.classes.OperationTorch.OperationTorch(name)
        o.set_param(json.dumps({"rank": rank, "rankSize": size, **extra}))
        kept.append(o)
        return o

    def mismatches(got, want):
        return int((got.reshape(-1).to(torch.float64) != want.reshape(-1).to(torch.float64)).sum())

    wrong = 0
    try:
        ranks_sum = sum(range(1, size + 1))
        # 8_400_001: past 16 MiB per host pair, where two gloo ranks reduce pairwise (in place, in two levels).
        for n in (7, 50_001, 300_000, 8_400_001):
            base = torch.arange(n) % 97
            (red,) = op("AllReduceOperation").execute([(base * (rank + 1)).float()])
            wrong += mismatches(red, base * ranks_sum)
        small = torch.arange(40_001) % 5
        (red16,) = op("AllReduceOperation").execute([(small + rank).to(torch.bfloat16)])
        wrong += mismatches(red16, small * size + sum(range(size)))
        (mx,) = op("AllReduceOperation", allReduceType="max").execute([(small * (rank + 1)).float()])
        wrong += mismatches(mx, small * size)
        for m in (1, 3000):
            x = torch.arange(m, dtype=torch.float32).repeat(2, 1) + 10_000 * rank
            (gat,) = op("AllGatherOperation").execute([x])
            wrong += mismatches(gat, torch.stack([torch.arange(m).repeat(2, 1) + 10_000 * r for r in range(size)]))
        for root in range(size):
            x = torch.full((20_000,), float(rank)) + torch.arange(20_000)
            op("BroadcastOperation", rankRoot=root).execute([x])
            wrong += mismatches(x, torch.arange(20_000) + root)
        codes = ((torch.arange(70_000) % 7 - 3) * (rank + 1)).to(torch.int8)  # int8: atb_ops.quant sums them exactly
        q = atb_ops.quant.quantized_all_reduce(codes, scale=0.5, out_dtype=torch.float32)
        wrong += mismatches(q, (torch.arange(70_000) % 7 - 3) * 0.5 * ranks_sum)
        x = (torch.arange(size * 33) * (rank + 1)).float()
        (rs,) = op("ReduceScatterOperation", reduceType="sum").execute([x])
        wrong += mismatches(rs, torch.arange(size * 33)[rank * 33:(rank + 1) * 33] * ranks_sum)
        # <uneven AllToAllVV2>
        used = {c["backend"] for c in atb_ops._C.communicator_stats("")}
        print(json.dumps({"wrong": wrong, "backends": sorted(used), "rode": rode[3:6]}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
    dist.destroy_process_group()
"""
EVERY_COLLECTIVE = EVERY_COLLECTIVE.replace("        # <uneven AllToAllVV2>\n", _UNEVEN_ALLTOALLV)


# argv: rank, size. atb_ops.distributed's collectives over the default group after init_process_group("gloo"):
# all_reduce (small, and large enough to be sharded), all_gather (also of 5 MiB, beside the caller's own pending
# send/recv), broadcast from every root, reduce_scatter,
# all_to_all_v with uneven counts, atb_ops.quant's int8 all-reduce; integer values, exact goldens. Prints
# {"wrong", "backend"} (the group's communicator) or {"error"}.
DISTRIBUTED_COLLECTIVES = """
    import datetime, json, sys, torch, torch.distributed as dist
    import atb_ops, atb_ops.quant
    from atb_ops import distributed as ad
    import hashlib
    from atb_ops._groups import comm_backend
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))

    def mismatches(got, want):
        return int((got.reshape(-1).to(torch.float64) != want.reshape(-1).to(torch.float64)).sum())

    wrong = 0
    try:
        ranks_sum = sum(range(1, size + 1))
        for n in (5, 300_001):
            base = (torch.arange(n) % 89).float()
            wrong += mismatches(ad.all_reduce(base * (rank + 1)), base * ranks_sum)
        x = torch.arange(6, dtype=torch.float32).reshape(2, 3) + 100 * rank
        want = torch.cat([torch.arange(6, dtype=torch.float32).reshape(2, 3) + 100 * r for r in range(size)])
        wrong += mismatches(ad.all_gather(x), want)
        for root in range(size):
            wrong += mismatches(ad.broadcast(torch.full((1000,), float(rank)), src=root), torch.full((1000,), root))
        x = torch.arange(size * 7, dtype=torch.float32) * (rank + 1)
        wrong += mismatches(ad.reduce_scatter(x), torch.arange(size * 7)[rank * 7:(rank + 1) * 7] * ranks_sum)
        # rank r sends (r + j + 1) * scale elements to rank j, valued 1000 * r + j + 4096 * (index % 251): small (in the
        # comparison) and large (through the hosts)
        for scale in (1, 2003):
            send_counts = [(rank + j + 1) * scale for j in range(size)]
            recv_counts = [(r + rank + 1) * scale for r in range(size)]
            sdispls = [sum(send_counts[:j]) for j in range(size)]
            rdispls = [sum(recv_counts[:r]) for r in range(size)]
            send = torch.cat([(torch.arange(c) % 251) * 4096.0 + 1000.0 * rank + j for j, c in enumerate(send_counts)])
            got = ad.all_to_all_v(send, send_counts, sdispls, recv_counts, rdispls)
            want = torch.cat([(torch.arange(c) % 251) * 4096.0 + 1000.0 * r + rank for r, c in enumerate(recv_counts)])
            wrong += mismatches(got, want)
        # An all-gather of 5 MiB + 3 bytes per rank (int8; by send/recv in pieces between hosts on the caller's
        # group), while the caller's own send and receive to its neighbour (tag 0) are still outstanding
        mine, theirs = torch.full((1000,), float(rank)), torch.empty(1000)
        pending = [dist.irecv(theirs, rank ^ 1), dist.isend(mine, rank ^ 1)]
        blocks = [((torch.arange((5 << 20) + 3) + 3 * r) % 239 - 119).to(torch.int8) for r in range(size)]
        wrong += mismatches(ad.all_gather(blocks[rank]), torch.cat(blocks))
        for work in pending:
            work.wait()
        wrong += mismatches(theirs, torch.full((1000,), float(rank ^ 1)))
        codes = ((torch.arange(70_000) % 7 - 3) * (rank + 1)).to(torch.int8)
        q = atb_ops.quant.quantized_all_reduce(codes, scale=0.5, out_dtype=torch.float32)
        wrong += mismatches(q, (torch.arange(70_000) % 7 - 3) * 0.5 * ranks_sum)
        # A float x, quantised per block: within the bound over every rank's input.
        n, block = 300_001, 128
        xs = [torch.randn(n, generator=torch.Generator().manual_seed(1234 + r)) for r in range(size)]
        got = atb_ops.quant.quantized_all_reduce(xs[rank], out_dtype=torch.float32)
        terms = [x.double() for x in xs]
        exact = sum(terms)

        def block_absmax(t):
            padded = torch.cat([t.abs(), t.new_zeros(-n % block)])
            return padded.view(-1, block).amax(1).repeat_interleave(block)[:n]

        bound = sum(block_absmax(t) for t in terms) / 254 + 1e-5 * sum(t.abs() for t in terms) + 1e-6
        quant_wrong = int(((got.double() - exact).abs() > bound).sum())
        digest = hashlib.sha256(got.numpy().tobytes()).hexdigest()
        print(json.dumps({"wrong": wrong, "backend": comm_backend(None, torch.ones(1)), "quant_wrong": quant_wrong,
                          "digest": digest}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
    dist.destroy_process_group()
"""


# argv: rank, size. One rank per host after init_process_group("gloo"): AllReduce of float32 and of bfloat16 (reduced
# widened) past 8 MiB with an odd length, one of float32 past 16 MiB (two ranks reduce it pairwise), and AllToAllVV2
# whose messages to the other host pass 8 MiB, scattered displacements, which ATB_OPS_GLOO_STREAMS splits over several
# connections. Small integers: exact goldens. Prints {"wrong", "streamed" and "pairwise" (the gloo communicator's
# streamed_bytes and pairwise_bytes), "backends"} or {"error"}.
LARGE_OVER_STREAMS = """
    import datetime, json, sys, torch, torch.distributed as dist
    import atb_ops
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    kept = []

    def op(name):
        o = torch.classes.OperationTorch.OperationTorch(name)
        o.set_param(json.dumps({"rank": rank, "rankSize": size, "commDomain": "streams"}))
        kept.append(o)
        return o

    wrong = 0
    try:
        n = (9 << 20) // 4 + 3
        base = torch.arange(n) % 61
        (red,) = op("AllReduceOperation").execute([(base * (rank + 1)).float()])
        wrong += int((red != base * sum(range(1, size + 1))).sum())
        (red16,) = op("AllReduceOperation").execute([(base % 7 + rank).to(torch.bfloat16)])
        wrong += int((red16.float() != (base % 7) * size + sum(range(size))).sum())
        big = torch.arange((17 << 20) // 4 + 3) % 53
        (red,) = op("AllReduceOperation").execute([(big * (rank + 1)).float()])
        wrong += int((red != big * sum(range(1, size + 1))).sum())
        unit = 1_100_003
        sc = [(rank + j + 1) * unit for j in range(size)]
        rc = [(i + rank + 1) * unit for i in range(size)]
        sd = [sum(sc[j + 1:]) + 5 * (size - j) for j in range(size)]
        rd = [sum(rc[i + 1:]) for i in range(size)]
        x = torch.full((max(d + c for d, c in zip(sd, sc)) + 3,), -1.0)
        for j in range(size):
            x[sd[j]:sd[j] + sc[j]] = (torch.arange(sc[j]) % 1009).float() + 1000 * rank + 100 * j
        counts = [torch.tensor(v, dtype=torch.int64) for v in (sc, sd, rc, rd)]
        (out,) = op("AllToAllVV2Operation").execute([x, *counts, torch.empty(sum(rc))])
        want = torch.empty(sum(rc))
        for i in range(size):
            want[rd[i]:rd[i] + rc[i]] = (torch.arange(rc[i]) % 1009).float() + 1000 * i + 100 * rank
        wrong += int((out.reshape(-1) != want).sum())
        # All-gathers of 9 MiB + 5 and 5 MiB + 3 bytes per rank (int8): by send/recv, in pieces (over both connections
        # where there are two, from 8 MiB)
        for numel in ((9 << 20) + 5, (5 << 20) + 3):
            block = [((torch.arange(numel) + 7 * r) % 241 - 120).to(torch.int8) for r in range(size)]
            (gat,) = op("AllGatherOperation").execute([block[rank]])
            wrong += int((gat != torch.stack(block)).sum())
        stats = atb_ops._C.communicator_stats("streams")
        print(json.dumps({"wrong": wrong, "streamed": sum(c["streamed_bytes"] for c in stats),
                          "pairwise": sum(c["pairwise_bytes"] for c in stats),
                          "backends": sorted({c["backend"] for c in stats})}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
    dist.destroy_process_group()
"""


# argv: rank, size. Calls repeated in a loop, each with new values: AllToAllVV2 (512 KiB to the others), AllReduce
# (1 MiB, and max; 4 MiB), AllGather, Broadcast; then calls that alternate with a small AllReduce; then rank 1
# passing one element more to each rank in a repeated AllToAllVV2. Prints {"wrong", "eager" (the bytes each phase's
# calls took from the comparison), "error" (the disagreement's first line), "untouched"} or {"error"}.
REPEATED_CALLS = """
    import datetime, json, sys, torch, torch.distributed as dist
    import atb_ops
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    ops = {}

    def op(name, **extra):
        if name not in ops:
            ops[name] = torch.classes.OperationTorch.OperationTorch(name.split("/")[0])
            ops[name].set_param(json.dumps({"rank": rank, "rankSize": size, "commDomain": "repeat", **extra}))
        return ops[name]

    def eager():
        return sum(c["eager_bytes"] for c in atb_ops._C.communicator_stats("repeat"))

    unit = (1 << 17) // (size - 1)  # elements to each rank: 512 KiB to the others in all

    def alltoall(step):
        sc = [unit] * size
        sd = [j * unit for j in range(size)]
        x = torch.cat([torch.arange(unit, dtype=torch.float32) + 1000 * rank + 100 * j + step for j in range(size)])
        counts = [torch.tensor(v, dtype=torch.int64) for v in (sc, sd, sc, sd)]
        (out,) = op("AllToAllVV2Operation").execute([x, *counts, torch.empty(size * unit)])
        want = torch.cat([torch.arange(unit, dtype=torch.float32) + 1000 * i + 100 * rank + step
                          for i in range(size)])
        return int((out.reshape(-1) != want).sum())

    def allreduce(step, n=1 << 18, kind="sum"):
        base = torch.arange(n) % 101 + step
        (red,) = op("AllReduceOperation/" + kind, allReduceType=kind).execute([(base * (rank + 1)).float()])
        want = base * (sum(range(1, size + 1)) if kind == "sum" else size)
        return int((red != want).sum())

    def allgather(step):
        x = torch.arange(1 << 15, dtype=torch.float32) + 10_000 * rank + step
        (gat,) = op("AllGatherOperation").execute([x])
        want = torch.stack([torch.arange(1 << 15) + 10_000 * r + step for r in range(size)])
        return int((gat != want).sum())

    def broadcast(step):
        x = torch.full((1 << 16,), float(rank)) + torch.arange(1 << 16) + step
        op("BroadcastOperation").execute([x])
        return int((x != torch.arange(1 << 16) + step).sum())

    wrong, taken = 0, {}
    try:
        for name, call in (("alltoall", alltoall), ("allreduce", allreduce),
                           ("max", lambda s: allreduce(s, kind="max")),
                           ("allreduce_4m", lambda s: allreduce(s, n=1 << 20)), ("allgather", allgather),
                           ("broadcast", broadcast)):
            before = eager()
            for step in range(5):
                wrong += call(step)
            taken[name] = eager() - before
        before = eager()
        for step in range(4):
            wrong += alltoall(step) + allreduce(step, n=8)
        taken["alternating"] = eager() - before
        for step in range(3):
            wrong += alltoall(step)
        out = torch.full((1, size * unit), -7.0)
        per = unit + (1 if rank == 1 else 0)
        x = torch.ones(size * per)
        counts = [torch.tensor(v, dtype=torch.int64) for v in
                  ([per] * size, [j * per for j in range(size)], [unit] * size, [i * unit for i in range(size)])]
        error = ""
        try:
            op("AllToAllVV2Operation").execute_out([x, *counts, torch.empty(size * unit)], [out])
        except RuntimeError as e:
            error = str(e).splitlines()[0]
        print(json.dumps({"wrong": wrong, "eager": taken, "error": error, "untouched": bool((out == -7).all())}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
    dist.destroy_process_group()
"""


# argv: rank, size. 2 hosts x 2 ranks on one kernel (emulated hosts): an AllReduce of 10 floats, done inside the
# two-step comparison of every rank's call, then one of 64 KiB, sharded. Prints {"wrong", "stats"} (the two-level
# communicator's counters after each call) or {"error"}.
SMALL_AND_SHARDED = """
    import datetime, json, sys, torch, torch.distributed as dist
    import atb_ops
    rank, size = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    o = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    o.set_param(json.dumps({"rank": rank, "rankSize": size, "commDomain": "small-and-sharded"}))
    wrong, stats = 0, []
    try:
        for numel in (10, 16384):
            x = torch.arange(numel, dtype=torch.float32) * (rank + 1)
            (got,) = o.execute([x])
            wrong += int((got != torch.arange(numel, dtype=torch.float32) * sum(range(1, size + 1))).sum())
            stats += atb_ops._C.communicator_stats("small-and-sharded")
        print(json.dumps({"wrong": wrong, "stats": stats}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
"""


# argv: rank, size, how ranks differ ("size": the odd ranks pass one element more to the AllReduce; "call": they
# call AllToAllVV2 instead; "counts": in an AllToAllVV2 they expect one element more from rank 0), then cases
# "numel:odd ranks" (odd ranks comma-separated). The cases run one after another on the same communicators, each
# opened by an AllReduce every rank agrees on (so a refused call leaves them usable), then the one that differs:
# every rank must raise at once (no rank left waiting between hosts). Prints a list, one {"error", "seconds",
# "wrong"} or {"wrong"} per case.
DISAGREEING_SIZES = """
    import datetime, json, sys, time, torch, torch.distributed as dist
    import atb_ops
    rank, size, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    o = torch.classes.OperationTorch.OperationTorch("AllReduceOperation")
    o.set_param(json.dumps({"rank": rank, "rankSize": size}))
    a2a = torch.classes.OperationTorch.OperationTorch("AllToAllVV2Operation")
    a2a.set_param(json.dumps({"rank": rank, "rankSize": size}))
    reports = []
    for case in sys.argv[4:]:
        numel, odd = case.split(":")
        numel, odd = int(numel), [int(r) for r in odd.split(",")]  # odd: the ranks that differ
        (agreed,) = o.execute([torch.ones(8)])
        wrong = int((agreed != size).sum())
        out = None
        began = time.monotonic()
        try:
            if how == "size":
                o.execute([torch.ones(numel + (rank in odd))])
            elif how == "counts":  # AllToAllVV2 where the odd ranks expect one element more from rank 0
                split = numel // size
                sc = [split] * size
                rc = [split + (rank in odd and i == 0) for i in range(size)]
                counts = [torch.tensor(v, dtype=torch.int64) for v in
                          (sc, [i * split for i in range(size)], rc, [sum(rc[:i]) for i in range(size)])]
                out = torch.full((sum(rc),), -7.0)
                a2a.execute_out([torch.ones(numel), *counts, torch.empty(sum(rc))], [out.reshape(1, -1)])
            elif rank in odd:  # "call": AllToAllVV2 (by hosts or the group of every rank) where the others all-reduce
                split = [numel // size] * size
                displs = [i * split[0] for i in range(size)]
                a2a.set_varaintpack_param(json.dumps({"sendCounts": split, "sdispls": displs, "recvCounts": split,
                                                      "rdispls": displs}))
                a2a.execute([torch.ones(numel), torch.empty(1, dtype=torch.int8).expand(numel)])
            else:
                o.execute([torch.ones(numel)])
            report = {}
        except RuntimeError as e:
            report = {"error": str(e).splitlines()[0], "seconds": time.monotonic() - began}
        if out is not None:
            wrong += int((out != -7.0).sum())  # nothing written on a refused call
        reports.append({**report, "wrong": wrong})
    (agreed,) = o.execute([torch.ones(8)])  # still usable after the last refusal
    reports[-1]["wrong"] += int((agreed != size).sum())
    print(json.dumps(reports))
"""


# argv: rank, size, seed, calls. A seeded sequence of AllToAllVV2 calls, the same on every rank (random.Random(seed)):
# per call a dtype (float32, float16, bfloat16, int8, int64: odd byte counts too), counts per rank pair from 0 to a
# scale drawn from tiny (inside the comparison) to past 1 MiB between hosts (the group of every rank) and up to
# 10 MB per message (gloo's messages in pieces), zeros among
# them, chunks in random order (with gaps in the input); a third of the calls repeat the previous counts (with new
# values and layout), so rooms are learned and outgrown, whole and partial rides happen, and every few calls an
# AllReduce or AllGather comes between. One operation object per collective, as a model layer keeps. Outputs start
# as sentinels: every element against its golden. Prints
# {"wrong", "rode", "calls"} or {"error"}.
RANDOM_ALLTOALLV = """
    import datetime, json, random, sys, torch, torch.distributed as dist
    import atb_ops
    rank, size, seed, calls = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dist.init_process_group("gloo", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=60))
    ops = {}

    def op(name):
        if name not in ops:
            ops[name] = torch.classes.OperationTorch.OperationTorch(name)
            ops[name].set_param(json.dumps({"rank": rank, "rankSize": size}))
        return ops[name]

    def values(step, src, dst, n, dtype):
        # exact in every dtype used (|v| <= 105), and no period a misplaced chunk could hide in
        i = torch.arange(n)
        return ((step * 7 + src * 31 + dst * 17 + i + (i // 211) * 3) % 211 - 105).to(dtype)

    def layout(counts, rng, gaps):
        # displacements of chunks in a random order, with random gaps when `gaps`; returns (displs, extent)
        order = list(range(len(counts)))
        rng.shuffle(order)
        displs, at = [0] * len(counts), rng.randint(0, 5) if gaps else 0
        for j in order:
            displs[j] = at
            at += counts[j] + (rng.choice((0, 0, 1, 7, 64)) if gaps else 0)
        return displs, at

    def eager():
        return sum(c["eager_bytes"] for c in atb_ops._C.communicator_stats(""))

    rng = random.Random(seed)
    dtypes = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int64)
    sentinel = -111
    wrong, rode, matrix, dtype = 0, 0, None, torch.float32
    try:
        for step in range(calls):
            pick = rng.random()
            if pick < 0.12:
                n = rng.choice((3, 4099, 70_001))
                (red,) = op("AllReduceOperation").execute([torch.arange(n, dtype=torch.float32) % 13 * (rank + 1)])
                wrong += int((red != torch.arange(n, dtype=torch.float32) % 13 * sum(range(1, size + 1))).sum())
                continue
            if pick < 0.2:
                n = rng.choice((5, 20_001))
                (gat,) = op("AllGatherOperation").execute([values(step, rank, 0, n, torch.float32)])
                want = torch.stack([values(step, r, 0, n, torch.float32) for r in range(size)])
                wrong += int((gat != want).sum())
                continue
            if matrix is None or pick > 0.55:
                scale = rng.choice((1, 40, 700, 3001, 20_000, 90_000, 400_000, 1_300_000))  # the last: pieces
                dtype = rng.choice(dtypes)
                matrix = [[0 if rng.random() < 0.2 else rng.randint(1, scale) for _ in range(size)]
                          for _ in range(size)]
            # every rank draws every layout, so the generator stays alike; receive regions tile the output (SPEC)
            sends = [layout(matrix[i], rng, True) for i in range(size)]
            recvs = [layout([matrix[i][j] for i in range(size)], rng, False) for j in range(size)]
            sd, extent = sends[rank]
            x = torch.full((extent + 1,), sentinel, dtype=dtype)
            for j in range(size):
                x[sd[j]:sd[j] + matrix[rank][j]] = values(step, rank, j, matrix[rank][j], dtype)
            rc = [matrix[i][rank] for i in range(size)]
            rd, out_extent = recvs[rank]
            out = torch.full((1, out_extent), sentinel, dtype=dtype)
            want = out.clone().reshape(-1)
            for i in range(size):
                want[rd[i]:rd[i] + rc[i]] = values(step, i, rank, rc[i], dtype)
            counts = [torch.tensor(v, dtype=torch.int64) for v in (matrix[rank], sd, rc, rd)]
            before = eager()
            op("AllToAllVV2Operation").execute_out([x, *counts, torch.empty(out_extent, dtype=dtype)], [out])
            rode += eager() - before
            wrong += int((out.reshape(-1) != want).sum())
        print(json.dumps({"wrong": wrong, "rode": rode, "calls": calls}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0]}))
    dist.destroy_process_group()
"""
