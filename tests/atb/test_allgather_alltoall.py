"""AllGatherOperation and AllToAllOperation through the ATB surface, against numpy goldens."""

from __future__ import annotations

import numpy as np
import pytest

from tests.atb import rank_tasks
from tests.support.backends import CPU_BACKENDS
from tests.support.golden import DTYPES, bits_view, itemsize, random_payload


@pytest.mark.parametrize("use_out", [False, True])
@pytest.mark.parametrize("dtype_name", ["int8", "int16", "bfloat16", "float64", "bool"])
@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_allgather(rank_pools, world_size, backend, dtype_name, use_out):
    rng = np.random.default_rng(world_size * 100 + len(dtype_name))
    shape = (3, 5)
    payloads = [random_payload(rng, 15, dtype_name) for _ in range(world_size)]
    outs = rank_pools(world_size).run(
        rank_tasks.run_allgather, backend, dtype_name, per_rank=[(p, shape, use_out) for p in payloads]
    )
    golden = np.concatenate([bits_view(p, dtype_name) for p in payloads])
    for rank, got in enumerate(outs):
        np.testing.assert_array_equal(bits_view(got, dtype_name), golden, err_msg=f"rank {rank}")


@pytest.mark.parametrize("dtype_name", ["int8", "float16", "int64", "uint8"])
@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_alltoall_equal_splits(rank_pools, world_size, backend, dtype_name):
    """Chunk i of dim 0 goes to rank i; output chunk j came from rank j."""
    rng = np.random.default_rng(world_size)
    rows_per_rank, cols = 2, 3
    shape = (world_size * rows_per_rank, cols)
    numel = shape[0] * shape[1]
    payloads = [random_payload(rng, numel, dtype_name) for _ in range(world_size)]
    outs = rank_pools(world_size).run(
        rank_tasks.run_alltoall, backend, dtype_name, per_rank=[(p, shape) for p in payloads]
    )
    chunk = rows_per_rank * cols
    for rank, got in enumerate(outs):
        golden = np.concatenate(
            [bits_view(payloads[src], dtype_name)[rank * chunk : (rank + 1) * chunk] for src in range(world_size)]
        )
        np.testing.assert_array_equal(bits_view(got, dtype_name), golden, err_msg=f"rank {rank}")
        assert len(got) == numel * itemsize(dtype_name)


def test_dtype_table_covers_spec():
    """docs/contract.md's ten dtypes are exactly the ones the suite runs."""
    assert set(DTYPES) == {
        "int8",
        "int16",
        "int32",
        "int64",
        "float16",
        "bfloat16",
        "float32",
        "uint8",
        "bool",
        "float64",
    }
