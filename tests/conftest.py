"""Shared fixtures: one persistent pool of CPU ranks per world size for the whole session."""

from __future__ import annotations

import pytest

from tests.support.rankpool import RankPool

_pools: dict[int, RankPool] = {}


@pytest.fixture(scope="session")
def rank_pools():
    """get(world_size) -> a live RankPool (restarted if a hung case had to tear one down)."""

    def get(world_size: int) -> RankPool:
        pool = _pools.get(world_size)
        if pool is None or not pool.alive:
            pool = RankPool(world_size)
            _pools[world_size] = pool
        return pool

    yield get
    for pool in _pools.values():
        pool.close()
    _pools.clear()
