"""ATB's communication family through the ATB surface, on every CPU backend, against plain-torch goldens.

One parametrized suite: backends (shm, gloo, hccl over HCCL's C API on CPU) x dtypes x world sizes x sizes.
Outputs written through execute_out start as a sentinel, so an element nobody wrote is caught; inputs come
from seeded generators (the seed is a pure function of the case), so a failing case reproduces.
"""

from __future__ import annotations

import os
import zlib

import pytest
import torch

from tests.atb import collective_tasks as tasks
from tests.support.backends import CPU_BACKENDS
from tests.support.golden import DTYPES, SENTINEL_BYTE
from tests.support.rankpool import RankPool

ALL_DTYPES = list(DTYPES)
SIZES = {"small": 37, "large": 70_000}  # below and above shm's eager limits (reductions 16 KiB, else 64 KiB)


def seed_of(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def random_tensor(gen: torch.Generator, dtype_name: str, shape: tuple[int, ...], op: str = "sum") -> torch.Tensor:
    """Values whose reductions stay meaningful: small ones for products, any in range otherwise."""
    dtype = DTYPES[dtype_name]
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_floating_point:
        scale = 2.0 if op == "prod" else 100.0
        return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(dtype)
    if op == "prod":
        return torch.randint(-3, 4, shape, generator=gen).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**40)), min(info.max, 2**40)
    return torch.randint(lo, hi + 1, shape, generator=gen, dtype=torch.int64).to(dtype)


def reduce_golden(xs: list[torch.Tensor], op: str) -> torch.Tensor:
    """The reduction over ranks by plain torch (integers wrap like the hardware; floats in float64)."""
    stack = torch.stack(xs)
    dtype = xs[0].dtype
    if dtype == torch.bool:
        return stack.any(0) if op in ("sum", "max") else stack.all(0)
    if dtype.is_floating_point:
        stack = stack.double()
        result = {"sum": stack.sum(0), "prod": stack.prod(0), "max": stack.amax(0), "min": stack.amin(0)}[op]
        return result
    result = {"sum": stack.sum(0), "prod": stack.prod(0), "max": stack.amax(0), "min": stack.amin(0)}[op]
    return result.to(dtype)


def assert_close(got: torch.Tensor, want: torch.Tensor, dtype_name: str, what: str) -> None:
    if DTYPES[dtype_name].is_floating_point:
        # 16-bit floats are summed exactly in float32 and rounded once, like the golden; float32 and float64
        # sums round at every step in rank order (inputs are ~100, so absolute errors of a few ulps of 400).
        rtol, atol = {"float16": (2e-3, 2e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-3),
                      "float64": (1e-12, 1e-9)}[dtype_name]
        torch.testing.assert_close(got.double(), want.double().to(got.dtype).double(), rtol=rtol, atol=atol,
                                   msg=lambda m: f"{what}: {m}")
    else:
        assert torch.equal(got, want), what


def binding_of(rank: int) -> str:
    """The Python door `rank` uses in this case: atb_ops.Operation (pybind11) or torch.classes.OperationTorch
    (TorchScript), alternating over ranks from a checksum of the test id (reruns agree). Both drive one C++
    operator, so ranks on different doors must agree on the wire; every door is covered without running the
    suite twice."""
    test_id = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    return ("torchscript", "pybind")[(zlib.crc32(test_id.encode()) + rank) % 2]


def run(pool, op_name, backend, param, per_rank_inputs, out_specs=None, pack=None):
    return pool.run(
        tasks.run_op,
        op_name,
        backend,
        param,
        per_rank=[(pack[r] if pack else None, inputs, out_specs[r] if out_specs else None, binding_of(r))
                  for r, inputs in enumerate(per_rank_inputs)],
    )


# ------------------------------------------------------------------------------------------------ AllReduce


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ALL_DTYPES)
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("size", list(SIZES))
def test_allreduce_sum(rank_pools, backend, dtype_name, world_size, size):
    _allreduce_case(rank_pools(world_size), backend, dtype_name, "sum", SIZES[size], use_out=size == "large")


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ALL_DTYPES)
@pytest.mark.parametrize("op", ["prod", "max", "min"])
@pytest.mark.parametrize("size", list(SIZES))
def test_allreduce_ops(rank_pools, backend, dtype_name, op, size):
    if backend == "hccl" and op == "prod" and dtype_name in ("int16", "bfloat16"):
        # ATB's own rule for HCCL products (not a limit of the CPU transport): rejected before communicating.
        with pytest.raises(Exception, match=r"ERROR_INVALID_TENSOR_DTYPE.*'prod' does not support"):
            _allreduce_case(rank_pools(3), backend, dtype_name, op, SIZES[size], use_out=size == "small")
        return
    _allreduce_case(rank_pools(3), backend, dtype_name, op, SIZES[size], use_out=size == "small")


def _allreduce_case(pool, backend, dtype_name, op, numel, use_out):
    n = pool.world_size
    gen = torch.Generator().manual_seed(seed_of("allreduce", backend, dtype_name, op, numel, n))
    xs = [random_tensor(gen, dtype_name, (numel,), op).reshape(-1, 1) for _ in range(n)]
    results = run(pool, "AllReduceOperation", backend, {"allReduceType": op},
                  [[tasks.spec_of(x)] for x in xs], [[(dtype_name, tuple(x.shape))] for x in xs] if use_out else None)
    want = reduce_golden(xs, op)
    for rank, res in enumerate(results):
        got = tasks.tensor_of(res["outputs"][0])
        assert got.shape == xs[rank].shape and got.dtype == DTYPES[dtype_name]
        assert_close(got, want, dtype_name, f"rank {rank}")
    # Every rank holds the same bits.
    assert len({res["outputs"][0][0] for res in results}) == 1


# 16 MiB and more over two gloo ranks: each rank reduces one half from its input into its output and sends it back
# (csrc/comm/gloo, allreducePairwise), in 1 MiB pieces; odd lengths, so the halves differ by one element and the
# last piece is short. 16-bit floats are reduced widened, int16 where gloo has no reduction, int64 products wrap.
PAIRWISE_CASES = [("float32", "sum", 4_194_305), ("bfloat16", "sum", 8_388_611), ("int16", "max", 8_388_609),
                  ("float64", "min", 2_097_153), ("int64", "prod", 2_097_155)]


@pytest.mark.parametrize("dtype_name,op,numel", PAIRWISE_CASES)
def test_allreduce_of_two_gloo_ranks_pairwise(rank_pools, dtype_name, op, numel):
    pool = rank_pools(2)
    gen = torch.Generator().manual_seed(seed_of("pairwise", dtype_name, op, numel))
    xs = [random_tensor(gen, dtype_name, (numel,), op) for _ in range(2)]
    assert xs[0].nbytes >= 16 << 20
    results = run(pool, "AllReduceOperation", "gloo", {"allReduceType": op}, [[tasks.spec_of(x)] for x in xs],
                  [[(dtype_name, (numel,))]] * 2)
    want = reduce_golden(xs, op)
    for rank, res in enumerate(results):
        assert_close(tasks.tensor_of(res["outputs"][0]), want, dtype_name, f"rank {rank}")
        assert res["inputs"][0][0] == tasks.spec_of(xs[rank])[0], f"rank {rank}: input changed"
    assert results[0]["outputs"][0][0] == results[1]["outputs"][0][0], "the ranks' results differ"


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_allreduce_in_place_through_execute_out(rank_pools, backend):
    """execute_out with the output over x: computed through a temporary, never from half-overwritten input."""
    pool = rank_pools(2)
    results = pool.run(tasks.run_in_place_allreduce, backend)
    for got, want in results:
        assert got == want


@pytest.mark.parametrize("backend", [b for b in CPU_BACKENDS if b != "gloo"])
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("size", list(SIZES))
def test_allreduce_max_min_propagate_nan(rank_pools, backend, dtype_name, op, size):
    """A NaN on any rank wins, as torch.maximum / torch.minimum: on the eager and the sharded shm paths.

    Not gloo: it reduces with gloo's own max/min, whose NaN result depends on the operand order (as with
    torch.distributed on gloo); README lists it under the differences between backends.
    """
    pool = rank_pools(3)
    numel = SIZES[size]
    gen = torch.Generator().manual_seed(seed_of("nan", backend, dtype_name, op, numel))
    xs = [random_tensor(gen, dtype_name, (numel, 1), op) for _ in range(3)]
    for rank, x in enumerate(xs):
        x[rank :: 7 + rank] = float("nan")  # some positions NaN on one rank, some on two, some on none
    results = run(pool, "AllReduceOperation", backend, {"allReduceType": op}, [[tasks.spec_of(x)] for x in xs])
    want = torch.stack(xs).amax(0) if op == "max" else torch.stack(xs).amin(0)
    assert want.isnan().any() and not want.isnan().all()
    for rank, res in enumerate(results):
        got = tasks.tensor_of(res["outputs"][0])
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=lambda m, r=rank: f"rank {r}: {m}")


# --------------------------------------------------------------------------------------- ReduceScatter(V)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["int8", "int32", "int64", "float16", "bfloat16", "float32", "uint8"])
@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_scatter(rank_pools, backend, dtype_name, world_size, op):
    pool = rank_pools(world_size)
    n = world_size
    gen = torch.Generator().manual_seed(seed_of("rs", backend, dtype_name, n, op))
    xs = [random_tensor(gen, dtype_name, (n * 5, 7), op) for _ in range(n)]
    results = run(pool, "ReduceScatterOperation", backend, {"reduceType": op}, [[tasks.spec_of(x)] for x in xs],
                  [[(dtype_name, (5, 7))]] * n)
    want = reduce_golden(xs, op)
    for rank, res in enumerate(results):
        assert_close(tasks.tensor_of(res["outputs"][0]), want[rank * 5 : (rank + 1) * 5], dtype_name, f"rank {rank}")


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32", "int64"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reductions_over_several_chunks(rank_pools, backend, dtype_name, op):
    """Shards of several of shm's ring chunks (3 ranks: 42 KiB slots): AllReduce and ReduceScatter of
    3 x 150 000 rows."""
    pool = rank_pools(3)
    gen = torch.Generator().manual_seed(seed_of("chunks", backend, dtype_name, op))
    xs = [random_tensor(gen, dtype_name, (3 * 150_000, 1), op) for _ in range(3)]
    want = reduce_golden(xs, op)
    all_reduce = run(pool, "AllReduceOperation", backend, {"allReduceType": op}, [[tasks.spec_of(x)] for x in xs])
    scatter = run(pool, "ReduceScatterOperation", backend, {"reduceType": op}, [[tasks.spec_of(x)] for x in xs])
    for rank in range(3):
        assert_close(tasks.tensor_of(all_reduce[rank]["outputs"][0]), want, dtype_name, f"allreduce rank {rank}")
        chunk = want[rank * 150_000 : (rank + 1) * 150_000]
        assert_close(tasks.tensor_of(scatter[rank]["outputs"][0]), chunk, dtype_name, f"reduce_scatter rank {rank}")


def test_shm_reduction_pipeline_across_mixed_calls():
    """shm with ATB_OPS_SHM_EAGER=0: every reduction goes through the pipeline, whose ring counters carry from
    call to call. 4 ranks, one communicator: all-reduces and a reduce-scatter of several dtypes, shards of
    several chunks, of one element and empty ones, must each match the golden."""
    steps = [  # (operator, reduce op, dtype, rows): all-reduces shard rows over 4 ranks, reduce-scatter 4 ways
        ("AllReduceOperation", "sum", "float32", 3),
        ("ReduceScatterOperation", "max", "int64", 4 * 50_001),
        ("AllReduceOperation", "sum", "bfloat16", 300_001),
        ("AllReduceOperation", "max", "bool", 100_003),
        ("AllReduceOperation", "prod", "int8", 1),
        ("ReduceScatterOperation", "sum", "float16", 4 * 7),
        ("AllReduceOperation", "min", "float64", 200_000),
    ]
    gen = torch.Generator().manual_seed(seed_of("pipeline-sequence"))
    xs = [[random_tensor(gen, dtype, (rows, 1), op) for _ in range(4)] for _, op, dtype, rows in steps]
    per_rank = []
    for r in range(4):
        plan = []
        for (name, op, _, _), inputs in zip(steps, xs, strict=True):
            key = "allReduceType" if name == "AllReduceOperation" else "reduceType"
            plan.append((name, {key: op}, [tasks.spec_of(inputs[r])]))
        per_rank.append((plan,))
    pool = RankPool(4, extra_env={"ATB_OPS_SHM_EAGER": "0"})
    try:
        results = pool.run(tasks.run_sequence, "shm", per_rank=per_rank)
    finally:
        pool.close()
    for i, ((name, op, dtype, rows), inputs) in enumerate(zip(steps, xs, strict=True)):
        want = reduce_golden(inputs, op)
        for r in range(4):
            got = tasks.tensor_of(results[r][i])
            if name == "ReduceScatterOperation":
                part = rows // 4
                assert_close(got, want[r * part : (r + 1) * part], dtype, f"step {i} {name} rank {r}")
            else:
                assert_close(got, want, dtype, f"step {i} {name} rank {r}")


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["int16", "float16", "float32", "int64"])
@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("layout", ["packed", "gaps", "zeros"])
def test_reduce_scatterv(rank_pools, backend, dtype_name, world_size, layout):
    _reduce_scatterv_case(rank_pools(world_size), backend, dtype_name, world_size, layout, (1, 9))


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float32"])
def test_reduce_scatterv_large_with_gaps(rank_pools, backend, dtype_name):
    """Counts of 20 000 - 60 000 elements with gaps between them: shm's pipeline (several ring chunks per
    shard, shards at arbitrary displacements), 3 ranks."""
    _reduce_scatterv_case(rank_pools(3), backend, dtype_name, 3, "gaps", (20_000, 60_000))


def _reduce_scatterv_case(pool, backend, dtype_name, n, layout, count_range):
    gen = torch.Generator().manual_seed(seed_of("rsv", backend, dtype_name, n, layout, count_range))
    counts = [int(c) for c in torch.randint(*count_range, (n,), generator=gen)]
    if layout == "zeros" and n > 1:
        counts[0] = 0
    gap = 3 if layout == "gaps" else 0
    displs = [sum(counts[:j]) + gap * j for j in range(n)]
    rows = displs[-1] + counts[-1] + gap
    xs = [random_tensor(gen, dtype_name, (rows, 1)) for _ in range(n)]
    extra = 2  # the output has room past recvCount: execute() leaves it zero
    per_rank, packs = [], []
    for r in range(n):
        host = [torch.tensor(counts), torch.tensor(displs), torch.tensor([counts[r]])]
        y = torch.zeros(counts[r] + extra, dtype=torch.float16)
        per_rank.append([tasks.spec_of(t) for t in (xs[r], *host, y)])
        packs.append({"sendCounts": counts, "sdispls": displs, "recvCount": counts[r]})
    results = run(pool, "ReduceScatterVOperation", backend, {}, per_rank, pack=packs)
    total = reduce_golden(xs, "sum").reshape(-1)
    for r, res in enumerate(results):
        got = tasks.tensor_of(res["outputs"][0]).reshape(-1)
        assert got.numel() == counts[r] + extra
        assert_close(got[: counts[r]], total[displs[r] : displs[r] + counts[r]], dtype_name, f"rank {r}")
        assert not got[counts[r] :].any(), f"rank {r}: elements past recvCount are not zero"


# ----------------------------------------------------------------------------------------------- AllGatherV


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ALL_DTYPES)
@pytest.mark.parametrize("world_size", [1, 2, 4])
@pytest.mark.parametrize("use_out", [False, True])
def test_allgatherv(rank_pools, backend, dtype_name, world_size, use_out):
    pool = rank_pools(world_size)
    n = world_size
    gen = torch.Generator().manual_seed(seed_of("agv", backend, dtype_name, n))
    counts = [int(c) for c in torch.randint(0, 12, (n,), generator=gen)]
    counts[-1] += 1  # sum(recvCounts) > 0
    displs = [sum(counts[:j]) + j for j in range(n)]  # a one-element gap before every region
    out_rows = displs[-1] + counts[-1] + 2
    xs = [random_tensor(gen, dtype_name, (counts[r] + 3, 1)) for r in range(n)]  # x has more than sendCount
    per_rank, packs = [], []
    for r in range(n):
        host = [torch.tensor([counts[r]]), torch.tensor(counts), torch.tensor(displs)]
        per_rank.append([tasks.spec_of(t) for t in (xs[r], *host, torch.zeros(out_rows))])
        packs.append({"sendCount": counts[r], "recvCounts": counts, "rdispls": displs})
    out_specs = [[(dtype_name, (out_rows, 1))]] * n if use_out else None
    results = run(pool, "AllGatherVOperation", backend, {}, per_rank, out_specs, pack=packs)
    written = torch.zeros(out_rows, dtype=torch.bool)
    want = torch.zeros(out_rows, dtype=DTYPES[dtype_name])
    for j in range(n):
        want[displs[j] : displs[j] + counts[j]] = xs[j].reshape(-1)[: counts[j]]
        written[displs[j] : displs[j] + counts[j]] = True
    for r, res in enumerate(results):
        raw, _, shape = res["outputs"][0]
        assert shape == (out_rows, 1)
        got = tasks.tensor_of(res["outputs"][0]).reshape(-1)
        assert torch.equal(got[written], want[written]), f"rank {r}"
        gaps = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, got.element_size())[~written]
        if use_out:
            assert (gaps == SENTINEL_BYTE).all(), f"rank {r}: a gap was written"
        else:
            assert (gaps == 0).all(), f"rank {r}: execute()'s gaps are not zero"


# -------------------------------------------------------------------------------------------------- Broadcast


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ALL_DTYPES)
@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("size", list(SIZES))
def test_broadcast(rank_pools, backend, dtype_name, world_size, size):
    pool = rank_pools(world_size)
    n = world_size
    root = n - 1
    gen = torch.Generator().manual_seed(seed_of("bcast", backend, dtype_name, n, size))
    xs = [random_tensor(gen, dtype_name, (SIZES[size],)) for _ in range(n)]
    results = run(pool, "BroadcastOperation", backend, {"rankRoot": root}, [[tasks.spec_of(x)] for x in xs])
    for r, res in enumerate(results):
        assert res["outputs"] == []  # ATB's Broadcast has no output: x is written in place
        assert torch.equal(tasks.tensor_of(res["inputs"][0]), xs[root]), f"rank {r}"


# -------------------------------------------------------------------------------------------- AllToAll, V


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["int8", "float16", "bfloat16", "float32", "int64", "bool"])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(3, 4, 6), (5, 12), (2400,)])
def test_alltoall_atb_semantics(rank_pools, backend, dtype_name, world_size, shape):
    """ATB's AllToAll: x's flattened elements in rankSize equal chunks; chunk j of the output from rank j."""
    pool = rank_pools(world_size)
    n = world_size
    gen = torch.Generator().manual_seed(seed_of("a2a", backend, dtype_name, n, shape))
    xs = [random_tensor(gen, dtype_name, shape) for _ in range(n)]
    results = run(pool, "AllToAllOperation", backend, {}, [[tasks.spec_of(x)] for x in xs],
                  [[(dtype_name, shape)]] * n)
    for r, res in enumerate(results):
        want = torch.cat([x.reshape(-1).chunk(n)[r] for x in xs]).reshape(shape)
        assert torch.equal(tasks.tensor_of(res["outputs"][0]), want), f"rank {r}"


@pytest.mark.parametrize("dtype_name", ["float16", "int32"])
@pytest.mark.parametrize("world_size", [2, 4])
def test_alltoall_transpose(rank_pools, dtype_name, world_size):
    """transpose (backend "lccl", as ATB): column block i of x goes to rank i; output [m * n, c / n]."""
    pool = rank_pools(world_size)
    n = world_size
    gen = torch.Generator().manual_seed(seed_of("a2a-t", dtype_name, n))
    xs = [random_tensor(gen, dtype_name, (3, 4 * n)) for _ in range(n)]
    results = run(pool, "AllToAllOperation", "lccl", {"transpose": True}, [[tasks.spec_of(x)] for x in xs])
    for r, res in enumerate(results):
        want = torch.cat([x[:, 4 * r : 4 * (r + 1)] for x in xs])
        assert torch.equal(tasks.tensor_of(res["outputs"][0]), want), f"rank {r}"


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("world_size", [2, 3])
def test_alltoallv_counts_in_param(rank_pools, backend, world_size):
    pool = rank_pools(world_size)
    n = world_size
    gen = torch.Generator().manual_seed(seed_of("a2av", backend, n))
    m = torch.randint(0, 6, (n, n), generator=gen)
    m[0, 0] += 1
    xs, params = [], []
    for r in range(n):
        send = [int(v) for v in m[r]]
        recv = [int(m[j, r]) for j in range(n)]
        xs.append(torch.arange(sum(send), dtype=torch.float32) + 100 * r)
        params.append({"sendCounts": send, "sdispls": [sum(send[:j]) for j in range(n)], "recvCounts": recv,
                       "rdispls": [sum(recv[:j]) for j in range(n)]})
    results = pool.run(tasks.run_op, "AllToAllVOperation", backend, per_rank=[
        (params[r], None, [tasks.spec_of(xs[r])], None) for r in range(n)])
    for r, res in enumerate(results):
        want = torch.cat([xs[j][sum(int(v) for v in m[j][:r]) : sum(int(v) for v in m[j][: r + 1])] for j in range(n)])
        got = tasks.tensor_of(res["outputs"][0])
        if want.numel():
            assert got.shape == (1, want.numel()) and torch.equal(got.reshape(-1), want), f"rank {r}"


# -------------------------------------------------------------------------------------------- Send / Recv


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("dtype_name", ["int8", "bfloat16", "float32", "bool"])
def test_send_recv_both_directions_and_non_adjacent(rank_pools, backend, dtype_name):
    """4 ranks: 0 <-> 3 (not neighbours) and 1 <-> 2, both directions in the same step (one side sends first,
    the other receives first), then a ring."""
    pool = rank_pools(4)
    gen = torch.Generator().manual_seed(seed_of("p2p", backend, dtype_name))
    data = {(a, b): random_tensor(gen, dtype_name, (50_000 if a < b else 17,)) for a in range(4) for b in range(4)}
    partner = {0: 3, 3: 0, 1: 2, 2: 1}
    plans = []
    for r in range(4):
        p = partner[r]
        send = ("send", p, tasks.spec_of(data[(r, p)]))
        recv = ("recv", p, tasks.spec_of(torch.zeros_like(data[(p, r)])))
        steps = [send, recv] if r < p else [recv, send]
        right, left = (r + 1) % 4, (r - 1) % 4
        ring_send = ("send", right, tasks.spec_of(data[(r, right)]))
        ring_recv = ("recv", left, tasks.spec_of(torch.zeros_like(data[(left, r)])))
        steps += [ring_send, ring_recv] if r % 2 == 0 else [ring_recv, ring_send]
        plans.append((steps,))
    results = pool.run(tasks.run_pairs, backend, per_rank=plans)
    for r, got in enumerate(results):
        p, left = partner[r], (r - 1) % 4
        assert torch.equal(tasks.tensor_of(got[0]), data[(p, r)]), f"rank {r} from {p}"
        assert torch.equal(tasks.tensor_of(got[1]), data[(left, r)]), f"rank {r} from {left}"


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_send_recv_size_mismatch_fails_on_both_ranks(rank_pools, backend):
    messages = rank_pools(2).run(tasks.run_pair_mismatch, backend)
    for message in messages:
        assert message.startswith("ERROR_"), messages
        assert "6" in message and "5" in message, messages
    # The communicator stays usable: a matching pair afterwards works.
    plans = [([("send", 1, tasks.spec_of(torch.ones(4)))],), ([("recv", 0, tasks.spec_of(torch.zeros(4)))],)]
    results = rank_pools(2).run(tasks.run_pairs, backend, per_rank=plans)
    assert torch.equal(tasks.tensor_of(results[1][0]), torch.ones(4))


# ------------------------------------------------------------------------------------- quantised AllReduce


@pytest.mark.parametrize("backend", ["lccl", "shm", "gloo"])
@pytest.mark.parametrize("quant_type", [1, 2])
@pytest.mark.parametrize("out_data_type", [1, 27])
@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_quantized_allreduce(rank_pools, backend, quant_type, out_data_type, world_size):
    """quantType 1/2: (sum_r x_r + offset * rankSize) * scale, through seed 004's int8 pipeline."""
    pool = rank_pools(world_size)
    n = world_size
    gen = torch.Generator().manual_seed(seed_of("quant", backend, quant_type, out_data_type, n))
    xs = [torch.randint(-127, 128, (6, 32), generator=gen, dtype=torch.int8) for _ in range(n)]
    scale = (torch.rand(32 if quant_type == 2 else 1, generator=gen) * 0.01).to(torch.float16)
    if quant_type == 2:
        scale = scale.reshape(1, 32)
    offset = torch.tensor([2.0], dtype=torch.float16)
    param = {"quantType": quant_type, "outDataType": out_data_type}
    results = run(pool, "AllReduceOperation", backend, param,
                  [[tasks.spec_of(x), tasks.spec_of(scale), tasks.spec_of(offset)] for x in xs])
    exact = (sum(x.double() for x in xs) + 2.0 * n) * scale.double().reshape(-1)
    out_dtype = torch.float16 if out_data_type == 1 else torch.bfloat16
    for r, res in enumerate(results):
        got = tasks.tensor_of(res["outputs"][0])
        assert got.dtype == out_dtype and got.shape == (6, 32)
        torch.testing.assert_close(got.double(), exact.to(out_dtype).double(), rtol=1e-2, atol=1e-3,
                                   msg=lambda m, r=r: f"rank {r}: {m}")
