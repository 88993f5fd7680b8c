"""LinearParallelOperation on 2 and 4 CPU ranks: every type x quantisation against independent goldens.

The goldens are plain torch in float64, computed here from exactly the bytes every rank used: a matmul per
rank, then the sum, gather, scatter or token routing written out element by element (the MoE routing as
explicit loops over tokens), never through atb_ops. Each output element must lie within a bound derived from
the arithmetic: every partial result is rounded once to the output dtype before it is communicated (as ATB's
lcoc kernels do), sums are taken in float32 and rounded once more, and float32 GEMMs add k * 2^-24 of the
absolute product. Outputs written with execute_out start as a sentinel, so an element nobody wrote is caught.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace

import pytest
import torch

from tests.atb import linear_parallel_tasks as tasks
from tests.atb.collective_tasks import spec_of, tensor_of
from tests.support.backends import needs_hccl_on_cpu

UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
ACL = {"float16": 1, "bfloat16": 27}
DT = {"float16": torch.float16, "bfloat16": torch.bfloat16}
LINEAR_ALL_REDUCE, LINEAR_REDUCE_SCATTER, ALL_GATHER_LINEAR, PURE_LINEAR, TWO_DIM, DISPATCH, COMBINE = range(7)
PER_TENSOR, PER_CHANNEL, PER_GROUP, PER_TOKEN = range(4)


@dataclass
class Case:
    """One call: the param and the shape of every rank's inputs."""

    name: str
    world: int
    type: int
    dtype: str = "float16"  # the output's dtype (x's too unless w8a8)
    quant: str = "none"  # none | w8a8 (int8 x and weight) | w8a16 (int8 weight)
    quant_type: int = -1
    scale: str = "int64"  # w8a8 deqScale: int64 (ATB's packed float32) or float
    bias: bool = True  # quantised: a dequant offset (an empty tensor otherwise)
    residual: bool = False
    residual_scale: float = 1.0  # the residual is randn times this (4: the sum nearly cancels it, as in ATB's bug)
    atb_tolerance: bool = False  # also hold ATB's own bound: |got - golden| <= max(|golden|, 1) * 2^-7 (bf16)
    trans: bool = True
    lead: tuple[int, ...] = (8,)  # x's dims before k
    k: int = 64
    n: int = 48
    group: int = 0
    keep: bool = False
    two_dim: tuple[int, int, int] | None = None  # agDim, rsDim, innerDimIsAg
    moe: tuple[int, int, int] | None = None  # epSize, tpSize, localExpertNums
    limit: int | None = None  # MoE: rows an owner keeps (None: all)
    extra_rows: int = 0  # MoE: rows beyond what the counts use
    backend: str = "shm"
    out: bool = False  # execute_out into sentinel buffers
    param: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ inputs


def seed_of(case: Case, rank: int) -> int:
    return zlib.crc32(repr((case.name, rank)).encode())


def int64_scale(s: torch.Tensor) -> torch.Tensor:
    """ATB's int64 deqScale: each float32's bits in the low word (as ATB's tests build it)."""
    return torch.stack((s, torch.zeros_like(s)), dim=-1).flatten().view(torch.int64).reshape(s.shape)


def counts_matrix(case: Case) -> torch.Tensor:
    ep, _, experts_per_rank = case.moe
    gen = torch.Generator().manual_seed(zlib.crc32(case.name.encode()))
    return torch.randint(0, 4, (ep, ep * experts_per_rank), generator=gen, dtype=torch.int32)


def param_of(case: Case) -> dict:
    p = {"type": case.type, "transWeight": case.trans, "hasResidual": case.residual, "quantType": case.quant_type,
         "keepIntermediate": case.keep, **case.param}
    if case.quant != "none":
        p["outDataType"] = ACL[case.dtype]
    if case.group:
        p["quantGroupSize"] = case.group
    if case.two_dim:
        p["twoDimTPInfo"] = dict(zip(("agDim", "rsDim", "innerDimIsAg"), case.two_dim, strict=True))
    if case.moe:
        p["moeInfo"] = dict(zip(("epSize", "tpSize", "localExpertNums"), case.moe, strict=True))
    return p


def rank_inputs(case: Case, rank: int) -> dict[str, torch.Tensor]:
    """This rank's named inputs (float values are exact in their dtype, so the golden sees the same numbers)."""
    gen = torch.Generator().manual_seed(seed_of(case, rank))
    dtype = DT[case.dtype]
    k, n = case.k, case.n
    experts = case.moe[2] if case.moe else 1
    t: dict[str, torch.Tensor] = {}
    if case.moe:
        counts = counts_matrix(case)
        ep_index = rank // case.moe[1]
        own = int(counts[ep_index].sum())
        if case.type == DISPATCH:
            rows = own + case.extra_rows
        else:
            rows = moe_owner_rows(case, counts, ep_index)
        lead = (rows,)
    else:
        lead = case.lead
    w_shape = (n, k) if case.trans else (k, n)
    if case.moe:
        w_shape = (experts, *w_shape)
    if case.quant == "w8a8":
        t["x"] = torch.randint(-16, 16, (*lead, k), generator=gen, dtype=torch.int8)
    else:
        t["x"] = torch.randn(*lead, k, generator=gen).to(dtype)
    if case.quant == "none":
        t["weight"] = (torch.randn(*w_shape, generator=gen) / k**0.5).to(dtype)
    else:
        t["weight"] = torch.randint(-16 if case.quant == "w8a8" else -8, 16 if case.quant == "w8a8" else 8, w_shape,
                                    generator=gen, dtype=torch.int8)
    if case.quant != "none":
        groups = -(-k // case.group) if case.quant_type == PER_GROUP else 1
        width = 1 if case.quant_type == PER_TENSOR else n
        shape = (groups, width) if (groups > 1 or rank % 2) else (width,)  # [n] and [1, n] both occur
        if case.moe:
            shape = (experts * n,)
        if case.quant == "w8a8":
            scale = torch.rand(shape, generator=gen) * 2e-3 + 1e-3
            t["scale_f32"] = scale
            t["deqScale"] = int64_scale(scale) if case.scale == "int64" else scale
            if not case.moe:
                t["bias"] = (torch.randint(-64, 64, shape, generator=gen, dtype=torch.int32) if case.bias
                             else torch.empty(0, dtype=torch.int32))
        else:
            t["deqScale"] = (torch.rand(shape, generator=gen) * 0.1 + 0.05).to(dtype)
            t["bias"] = (torch.randn(shape, generator=gen).to(dtype) if case.bias else torch.empty(0, dtype=dtype))
    if case.residual:
        t["residual"] = (torch.randn((n,) if rank % 2 == 0 else (1, n), generator=gen) * case.residual_scale).to(dtype)
    if case.quant_type == PER_TOKEN:
        t["perTokenScale"] = torch.rand(lead[0] if case.moe else int(torch.tensor(lead).prod()), generator=gen) + 0.5
    if case.moe:
        t["globalTokensPerExpertMatrix"] = counts_matrix(case)
        t["maxOutputSize"] = torch.zeros(moe_output_rows(case, counts, ep_index), dtype=torch.int32)
    return t


ORDER = ["x", "weight", "bias", "deqScale", "residual", "perTokenScale", "globalTokensPerExpertMatrix",
         "maxOutputSize"]


def ordered(t: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """ATB's input order (MoE: no bias)."""
    return [t[name] for name in ORDER if name in t]


# ------------------------------------------------------------------------------------------------ goldens


def dense_weight(case: Case, w: torch.Tensor, t: dict, expert: int | None = None) -> torch.Tensor:
    """The weight as float64 [k, n], dequantised for w8a16 (offset and scale per tensor / channel / group)."""
    if expert is not None:
        w = w[expert]
    w = (w.t() if case.trans else w).double()
    if case.quant != "w8a16":
        return w
    k = w.shape[0]

    def per_row(v: torch.Tensor) -> torch.Tensor:
        v = v.double().reshape(-1, v.shape[-1])
        if case.quant_type == PER_GROUP:
            return torch.cat([v[i // case.group].unsqueeze(0) for i in range(k)])
        return v.reshape(1, -1)

    if t["bias"].numel():
        w = w + per_row(t["bias"])
    return w * per_row(t["deqScale"])


def local(case: Case, x: torch.Tensor, t: dict, expert: int | None = None,
          token_scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(this rank's x @ weight in float64 [rows, n], a bound on float32 GEMM error of that result)."""
    x2 = x.reshape(-1, case.k).double()
    w = dense_weight(case, t["weight"], t, expert)
    prod = x2 @ w
    gemm_err = (x2.abs() @ w.abs()) * case.k * 2.0**-24
    if case.quant == "w8a8":
        scale = t["scale_f32"].double().reshape(-1)
        if expert is not None:
            scale = scale[expert * case.n:(expert + 1) * case.n]
        if "bias" in t and t["bias"].numel():
            prod = prod + t["bias"].double().reshape(1, -1)
        prod = prod * scale.reshape(1, -1)
        gemm_err = prod.abs() * 2.0**-22  # exact integer product, then float32 dequant steps
    if token_scale is not None:
        prod = prod * token_scale.double().reshape(-1, 1)
        gemm_err = gemm_err * token_scale.double().reshape(-1, 1)
    return prod, gemm_err


def two_dim_members(two_dim: tuple[int, int, int], q: int) -> tuple[list[int], list[int]]:
    """Rank q's all-gather group and reduce-scatter group, each in position order: with innerDimIsAg the ag group
    is consecutive ranks (q = rs_pos * agDim + ag_pos), else the rs group is (q = ag_pos * rsDim + rs_pos)."""
    ag, rs, inner = two_dim
    if inner:
        a, s = q % ag, q // ag
        return [s * ag + j for j in range(ag)], [p * ag + a for p in range(rs)]
    a, s = q // rs, q % rs
    return [j * rs + s for j in range(ag)], [a * rs + p for p in range(rs)]


def dense_golden(case: Case, ins: list[dict]) -> list[tuple[torch.Tensor, torch.Tensor, tuple]]:
    """Per rank: (golden float64, error bound, output shape) of the non-MoE types."""
    ws = case.world
    tok = [t.get("perTokenScale") for t in ins]
    parts = [local(case, t["x"], t, token_scale=tok[r]) for r, t in enumerate(ins)]
    u = UNIT_ROUNDOFF[case.dtype]
    base_shape = (*case.lead, case.n)
    out = []
    for r, t in enumerate(ins):
        if case.type in (LINEAR_ALL_REDUCE, PURE_LINEAR) or case.backend == "hccl":
            members = range(ws) if case.type != PURE_LINEAR or case.backend == "hccl" else [r]
            want = sum(parts[q][0] for q in members)
            mag = sum(parts[q][0].abs() for q in members)
            err = sum(parts[q][1] for q in members)
            shape = base_shape
        elif case.type == LINEAR_REDUCE_SCATTER:
            total = sum(p[0] for p in parts)
            mag = sum(p[0].abs() for p in parts)
            err = sum(p[1] for p in parts)
            rows = total.shape[0] // ws
            want, mag, err = (v[r * rows:(r + 1) * rows] for v in (total, mag, err))
            d = 1 if len(case.lead) == 2 and case.lead[0] == 1 else 0
            shape = list(base_shape)
            shape[d] //= ws
            shape = tuple(shape)
        elif case.type == ALL_GATHER_LINEAR:
            gathered = torch.cat([q["x"] for q in ins])
            want, err = local(case, gathered, t)
            mag = want.abs()
            shape = (base_shape[0] * ws, *base_shape[1:])
        else:  # TWO_DIM
            ag, rs, _ = case.two_dim
            results = {}
            for q in two_dim_members(case.two_dim, r)[1]:
                gathered = torch.cat([ins[m]["x"] for m in two_dim_members(case.two_dim, q)[0]])
                results[q] = local(case, gathered, ins[q])
            chunk = results[r][0].shape[0] // rs
            pos = two_dim_members(case.two_dim, r)[1].index(r)
            sl = slice(pos * chunk, (pos + 1) * chunk)
            want = sum(v[0][sl] for v in results.values())
            mag = sum(v[0][sl].abs() for v in results.values())
            err = sum(v[1][sl] for v in results.values())
            shape = (base_shape[0] * ag // rs, *base_shape[1:])
        want = want.reshape(-1, case.n)
        mag = mag.reshape(-1, case.n)
        if case.residual:
            res = t["residual"].double().reshape(1, -1)
            want = want + res
            mag = mag + res.abs()
        bound = 2 * u * (mag + want.abs()) + err.reshape(-1, case.n)
        out.append((want, bound, shape))
    return out


def moe_walk(case: Case, counts: torch.Tensor, owner_group: int) -> list[tuple[int, int, int]]:
    """The rows an owner group holds, in order: (source rank, source row, local expert) for each local expert,
    source EP index, source TP index; a source's rows for one expert are consecutive, experts in order."""
    ep, tp, experts = case.moe
    walk = []
    for expert in range(experts):
        e = owner_group * experts + expert
        for j in range(ep):
            start = int(counts[j][:e].sum())
            for t in range(tp):
                walk += [(j * tp + t, start + i, expert) for i in range(int(counts[j][e]))]
    return walk


def moe_kept(case: Case, counts: torch.Tensor, group: int) -> int:
    """Rows an owner keeps: dispatch: maxOutputSize's length; combine: x's rows. Every rank passes the same value
    (ranks cut the walk of every owner group with their own, as ATB's kernels do); case.limit makes it cut."""
    if case.limit is not None:
        return case.limit
    longest = max(len(moe_walk(case, counts, g)) for g in range(case.moe[0]))
    return longest + (2 if case.type == DISPATCH else case.extra_rows)


def moe_owner_rows(case: Case, counts: torch.Tensor, group: int) -> int:
    """Combine's x rows (the rows past the walk are padding)."""
    return moe_kept(case, counts, group)


def moe_output_rows(case: Case, counts: torch.Tensor, group: int) -> int:
    """maxOutputSize's length: dispatch keeps at most this many rows; combine returns this many."""
    if case.type == DISPATCH:
        return moe_kept(case, counts, group)
    return int(counts[group].sum()) + 3


def moe_golden(case: Case, ins: list[dict]) -> list[tuple[torch.Tensor, torch.Tensor, tuple]]:
    ep, tp, _ = case.moe
    counts = counts_matrix(case)
    u = UNIT_ROUNDOFF[case.dtype]
    out = []
    for r, t in enumerate(ins):
        g = r // tp
        rows_out = t["maxOutputSize"].shape[0]
        want = torch.zeros(rows_out, case.n, dtype=torch.float64)
        mag = torch.zeros_like(want)
        err = torch.zeros_like(want)
        if case.type == DISPATCH:
            kept = moe_walk(case, counts, g)[:moe_kept(case, counts, g)]
            for i, (src, row, expert) in enumerate(kept):
                tok = ins[src]["perTokenScale"][row:row + 1] if "perTokenScale" in ins[src] else None
                p, e = local(case, ins[src]["x"][row:row + 1], t, expert, tok)
                want[i], mag[i], err[i] = p[0], p[0].abs(), e[0]
            filled = len(kept)
        else:
            for group in range(ep):
                kept = moe_walk(case, counts, group)[:moe_kept(case, counts, group)]
                for pos, (src, row, expert) in enumerate(kept):
                    if src != r:
                        continue
                    for owner in range(group * tp, (group + 1) * tp):
                        o = ins[owner]
                        tok = o["perTokenScale"][pos:pos + 1] if "perTokenScale" in o else None
                        p, e = local(case, o["x"][pos:pos + 1], o, expert, tok)
                        want[row] += p[0]
                        mag[row] += p[0].abs()
                        err[row] += e[0]
            filled = int(counts[g].sum())
        if case.residual:
            res = t["residual"].double().reshape(1, -1)
            want[:filled] += res
            mag[:filled] += res.abs()
        out.append((want, 2 * u * (mag + want.abs()) + err, (rows_out, case.n)))
    return out


def check(got: torch.Tensor, want: torch.Tensor, bound: torch.Tensor, what: str) -> None:
    diff = (got.double().reshape(want.shape) - want).abs()
    bad = ~(diff <= bound)  # NaN counts as bad
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.numel()} elements off; first at flat index {i}: "
                             f"got {got.flatten()[i].item()}, want {want.flatten()[i].item()}, bound "
                             f"{bound.flatten()[i].item():.3g}")


def atb_bound(case: Case, want: torch.Tensor) -> torch.Tensor:
    """ATB's one-golden accuracy standard (its operator tests): max(|golden|, 1) times 2^-7 for bfloat16 and 2^-8 for
    float16, one power of two looser once a result sums 2048 products or more."""
    calc = case.k * case.world
    exponent = {"bfloat16": -7, "float16": -8}[case.dtype] + (1 if calc >= 2048 else 0)
    return want.abs().clamp(min=1) * 2.0**exponent


def run_case(rank_pools, case: Case) -> None:
    pool = rank_pools(case.world)
    ins = [rank_inputs(case, r) for r in range(case.world)]
    goldens = moe_golden(case, ins) if case.moe else dense_golden(case, ins)
    out_specs = None
    if case.out:
        out_specs = [[(case.dtype, shape)] for _, _, shape in goldens]
        if case.keep:
            for r in range(case.world):
                x = ins[r]["x"]
                out_specs[r].append((next(k for k, v in DT.items() if v == x.dtype), (x.shape[0] * case.world,
                                                                                        *x.shape[1:])))
    results = pool.run(tasks.run_linear_parallel, case.backend, param_of(case),
                       per_rank=[([spec_of(v) for v in ordered(ins[r])], out_specs[r] if out_specs else None)
                                 for r in range(case.world)])
    for r, (res, (want, bound, shape)) in enumerate(zip(results, goldens, strict=True)):
        outs = [tensor_of(s) for s in res["outputs"]]
        assert len(outs) == (2 if case.keep else 1), f"rank {r}: {len(outs)} outputs"
        assert tuple(outs[0].shape) == shape and outs[0].dtype == DT[case.dtype], (r, outs[0].shape, outs[0].dtype)
        assert res["infer"]["shape"][0] == list(shape), (r, res["infer"])
        check(outs[0], want, bound, f"{case.name} rank {r}")
        if case.atb_tolerance:
            check(outs[0], want, atb_bound(case, want), f"{case.name} rank {r} (ATB's tolerance)")
        if case.keep:
            assert torch.equal(outs[1], torch.cat([q["x"] for q in ins])), f"rank {r}: intermediate"


# ------------------------------------------------------------------------------------------------ cases


def dense_cases() -> list[Case]:
    cases = []
    for dtype in ("float16", "bfloat16"):
        for world in (2, 4):
            cases += [
                Case(f"ar-{dtype}-{world}", world, LINEAR_ALL_REDUCE, dtype, residual=True, out=True),
                Case(f"ar3d-{dtype}-{world}", world, LINEAR_ALL_REDUCE, dtype, lead=(2, 5), trans=False),
                Case(f"rs-{dtype}-{world}", world, LINEAR_REDUCE_SCATTER, dtype, lead=(4 * world,), residual=True,
                     out=True),
                Case(f"rs3d-{dtype}-{world}", world, LINEAR_REDUCE_SCATTER, dtype, lead=(world, 3), trans=False),
                Case(f"rs3d1-{dtype}-{world}", world, LINEAR_REDUCE_SCATTER, dtype, lead=(1, 2 * world)),
                Case(f"ag-{dtype}-{world}", world, ALL_GATHER_LINEAR, dtype, residual=True),
                Case(f"agkeep-{dtype}-{world}", world, ALL_GATHER_LINEAR, dtype, keep=True, out=True, lead=(2, 3)),
                Case(f"pure-{dtype}-{world}", world, PURE_LINEAR, dtype, residual=True, out=True),
            ]
        cases += [
            Case(f"2d-inner-{dtype}", 4, TWO_DIM, dtype, two_dim=(2, 2, 1), residual=True, out=True),
            Case(f"2d-outer-{dtype}", 4, TWO_DIM, dtype, two_dim=(2, 2, 0), trans=False),
            Case(f"2d-ag4-{dtype}", 4, TWO_DIM, dtype, two_dim=(4, 1, 1), lead=(3,)),
            Case(f"2d-rs4-{dtype}", 4, TWO_DIM, dtype, two_dim=(1, 4, 0), lead=(8,)),
            Case(f"2d-ag2-rs1-{dtype}", 2, TWO_DIM, dtype, two_dim=(2, 1, 0), lead=(3,)),
        ]
        # The residual nearly cancels the product (4 * randn against K 72): a result rounded twice misses ATB's
        # bound; lcoc adds the residual in the accumulator and rounds once.
        near = {"residual": True, "residual_scale": 4.0, "atb_tolerance": True, "k": 72, "n": 40}
        cases += [
            Case(f"atb-tol-ag-{dtype}", 2, ALL_GATHER_LINEAR, dtype, **near),
            Case(f"atb-tol-ar-{dtype}", 2, LINEAR_ALL_REDUCE, dtype, out=True, **near),
            Case(f"atb-tol-rs-{dtype}", 2, LINEAR_REDUCE_SCATTER, dtype, lead=(8,), **near),
            Case(f"atb-tol-pure-{dtype}", 2, PURE_LINEAR, dtype, **near),
            Case(f"atb-tol-2d-{dtype}", 4, TWO_DIM, dtype, two_dim=(2, 2, 1), **near),
        ]
    return cases


def quant_cases() -> list[Case]:
    cases = []
    for world in (2, 4):
        for ptype in (LINEAR_ALL_REDUCE, LINEAR_REDUCE_SCATTER, ALL_GATHER_LINEAR, PURE_LINEAR):
            tag = f"{ptype}-{world}"
            cases += [
                Case(f"w8a8-tensor-{tag}", world, ptype, "float16", "w8a8", PER_TENSOR, out=True),
                Case(f"w8a8-channel-{tag}", world, ptype, "bfloat16", "w8a8", PER_CHANNEL, residual=True,
                     trans=False),
                Case(f"w8a8-channel-float-{tag}", world, ptype, "bfloat16", "w8a8", PER_CHANNEL, "float",
                     bias=False, k=2100),  # k beyond one exact float32 block
                Case(f"w8a16-tensor-{tag}", world, ptype, "float16", "w8a16", PER_TENSOR, residual=True),
                Case(f"w8a16-channel-{tag}", world, ptype, "bfloat16", "w8a16", PER_CHANNEL, bias=False,
                     trans=False),
                Case(f"w8a16-group-{tag}", world, ptype, "float16", "w8a16", PER_GROUP, group=16, out=True),
                Case(f"w8a16-group-ragged-{tag}", world, ptype, "bfloat16", "w8a16", PER_GROUP, group=32, k=72),
            ]
        cases += [
            Case(f"w8a8-token-{world}", world, LINEAR_ALL_REDUCE, "bfloat16", "w8a8", PER_TOKEN, residual=True,
                 out=True),
            Case(f"w8a8-token-f16-{world}", world, LINEAR_ALL_REDUCE, "float16", "w8a8", PER_TOKEN, lead=(2, 3)),
            Case(f"w8a16-token-{world}", world, LINEAR_ALL_REDUCE, "float16", "w8a16", PER_TOKEN),
        ]
    for c in cases:
        c.lead = (4 * c.world,) if c.type == LINEAR_REDUCE_SCATTER and len(c.lead) == 1 else c.lead
    return cases


def moe_cases() -> list[Case]:
    cases = []
    for ptype, tag in ((DISPATCH, "dispatch"), (COMBINE, "combine")):
        for dtype in ("float16", "bfloat16"):
            cases += [
                Case(f"{tag}-ep2-{dtype}", 2, ptype, dtype, moe=(2, 1, 2), k=32, n=24, out=True),
                Case(f"{tag}-ep4-{dtype}", 4, ptype, dtype, moe=(4, 1, 3), k=32, n=24, trans=False, residual=True),
                Case(f"{tag}-ep2tp2-{dtype}", 4, ptype, dtype, moe=(2, 2, 2), k=32, n=24, out=True),
                Case(f"{tag}-ep1tp2-{dtype}", 2, ptype, dtype, moe=(1, 2, 1), k=16, n=8),
                Case(f"{tag}-cut-{dtype}", 2, ptype, dtype, moe=(2, 1, 3), k=32, n=24, limit=5, extra_rows=1,
                     out=True),
                Case(f"{tag}-cut-tp2-{dtype}", 4, ptype, dtype, moe=(2, 2, 2), k=16, n=8, limit=3),
            ]
        cases += [
            Case(f"{tag}-w8a8-channel", 4, ptype, "float16", "w8a8", PER_CHANNEL, moe=(4, 1, 2), k=64, n=32, out=True),
            Case(f"{tag}-w8a8-channel-float", 2, ptype, "bfloat16", "w8a8", PER_CHANNEL, "float", moe=(2, 1, 2),
                 k=64, n=32, trans=False),
            Case(f"{tag}-w8a8-token", 4, ptype, "float16", "w8a8", PER_TOKEN, moe=(2, 2, 2), k=64, n=32,
                 residual=True, out=True),
            Case(f"{tag}-w8a8-token-cut", 2, ptype, "bfloat16", "w8a8", PER_TOKEN, moe=(2, 1, 2), k=64, n=32,
                 limit=4),
        ]
    return cases


DENSE, QUANT, MOE = dense_cases(), quant_cases(), moe_cases()


@pytest.mark.parametrize("case", DENSE, ids=lambda c: c.name)
def test_dense(rank_pools, case):
    run_case(rank_pools, case)


@pytest.mark.parametrize("case", QUANT, ids=lambda c: c.name)
def test_quantised(rank_pools, case):
    run_case(rank_pools, case)


@pytest.mark.parametrize("case", MOE, ids=lambda c: c.name)
def test_moe(rank_pools, case):
    run_case(rank_pools, case)


@pytest.mark.parametrize("backend", ["lcoc", "gloo"])
def test_other_backends(rank_pools, backend):
    """ATB's fused backend name ('lcoc', on CPU the native backend) and gloo run the same semantics."""
    run_case(rank_pools, Case(f"backend-{backend}", 2, LINEAR_REDUCE_SCATTER, lead=(8,), backend=backend,
                              residual=True, out=True))
    run_case(rank_pools, Case(f"backend-moe-{backend}", 2, DISPATCH, moe=(2, 1, 2), k=16, n=8, backend=backend))


@needs_hccl_on_cpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_hccl_graph_runner(rank_pools, dtype):
    """backend 'hccl' is ATB's graph runner: matmul, all-reduce over HCCL's C API on CPU, then the residual."""
    run_case(rank_pools, Case(f"hccl-{dtype}", 2, LINEAR_ALL_REDUCE, dtype, backend="hccl", residual=True, out=True))


def test_repeated_calls_and_mixed_types(rank_pools):
    """One pool, several operations in sequence: communicators are reused and no call leaks into the next."""
    for case in (DENSE[0], QUANT[1], MOE[0], DENSE[2]):
        run_case(rank_pools, replace(case, name=case.name + "-again"))


def test_matrix_disagreeing_across_ranks(rank_pools):
    """Ranks whose globalTokensPerExpertMatrix differ raise on every rank (the alltoallv's cross-rank check)
    instead of moving mismatched data."""
    case = Case("disagree", 2, DISPATCH, moe=(2, 1, 1), k=16, n=8)
    ins = [rank_inputs(case, r) for r in range(2)]
    ins[1]["globalTokensPerExpertMatrix"] = ins[1]["globalTokensPerExpertMatrix"] + 1
    ins[1]["x"] = torch.randn(int(ins[1]["globalTokensPerExpertMatrix"][1].sum()), 16).half()
    errors = rank_pools(2).run(tasks.run_expect_error, "shm", param_of(case),
                               per_rank=[([spec_of(v) for v in ordered(ins[r])],) for r in range(2)])
    for r, e in enumerate(errors):
        assert e.startswith("ERROR_INVALID_PARAM") and "mismatch" in e, (r, e)
    run_case(rank_pools, replace(case, name="disagree-then-fine"))


def test_torch_atb_surface(rank_pools):
    """torch_atb.Operation(LinearParallelParam(...)).forward gives what OperationTorch gives."""
    case = Case("torch-atb", 2, LINEAR_ALL_REDUCE, "bfloat16", "w8a8", PER_CHANNEL, residual=True)
    ins = [rank_inputs(case, r) for r in range(2)]
    kwargs = {"backend": "lcoc", "trans_weight": True, "has_residual": True, "quant_type": PER_CHANNEL,
              "out_data_type": 27}
    outs = rank_pools(2).run(tasks.run_torch_atb, kwargs, per_rank=[([spec_of(v) for v in ordered(ins[r])],)
                                                                   for r in range(2)])
    for r, ((want, bound, _), got) in enumerate(zip(dense_golden(case, ins), outs, strict=True)):
        check(tensor_of(got[0]), want, bound, f"torch_atb rank {r}")
    moe = Case("torch-atb-moe", 2, COMBINE, moe=(2, 1, 2), k=16, n=8)
    ins = [rank_inputs(moe, r) for r in range(2)]
    kwargs = {"backend": "lcoc", "type": COMBINE, "moe_info": {"localExpertNums": 2, "epSize": 2, "tpSize": 1}}
    outs = rank_pools(2).run(tasks.run_torch_atb, kwargs, per_rank=[([spec_of(v) for v in ordered(ins[r])],)
                                                                   for r in range(2)])
    for r, ((want, bound, _), got) in enumerate(zip(moe_golden(moe, ins), outs, strict=True)):
        check(tensor_of(got[0]), want, bound, f"torch_atb moe rank {r}")
