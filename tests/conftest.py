"""Shared fixtures: one persistent pool of CPU ranks per world size for the whole session."""

from __future__ import annotations

import os

import pytest

from tests.support.rankpool import RankPool

# torch's TCPStore names every connection it makes or accepts with a reverse DNS lookup (getnameinfo, even of
# 127.0.0.1 as an IPv6-mapped address, which /etc/hosts does not list). Where the name server drops a query now and
# then (this VM's does), the lookup waits out the resolver's 5 s timeout and the communicator being created (HCCL's
# root info, a rank table) stalls: 5.0 s cases all over the suite. One try of 1 s bounds that; nothing under test
# needs DNS (every address is loopback or an emulated host's). Every rank and script the suite starts inherits it.
os.environ.setdefault("RES_OPTIONS", "timeout:1 attempts:1")

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
