"""The raw exchange between two emulated hosts: what gloo's own send and receive move across the link, both ways at
once, with no collective around them.

The link limit (``report.link_limits``) is the bytes the busiest host must send at the link's nominal rate. On
emulated hosts the TCP stacks of both hosts share this machine's cores, so sending both ways at once reaches less
than the rate (on this project's 2-core VM at 10 Gbit/s 0.5-0.77 of it, where one way alone reaches all of it).
This column times exactly the limit's bytes moving that way: every rank sends its share of them to the rank of its
local index on the other host while receiving as much from it, in one ``isend`` and one ``recv`` on one gloo
connection. It is the plain way to move those bytes, not a ceiling: a collective that splits them into pieces over
two connections can beat it (atb_ops' pairwise all-reduce on 2 x 1 does from 16 MiB).
"""

from __future__ import annotations

import torch

from atb_ops.bench import ops, workload
from atb_ops.bench.rank_group import BenchRank


def partner(rank: int, per_host: int) -> int:
    """The rank of `rank`'s local index on the other of two hosts (ranks host by host).

    Args:
        rank: this rank.
        per_host: the ranks on each host.

    Returns:
        The partner's rank.
    """
    host, local = divmod(rank, per_host)
    return (1 - host) * per_host + local


def share_bytes(op: str, size: int, per_host: int) -> int:
    """What each rank sends its partner: its share of the bytes the link limit counts for `op` at `size` on two
    hosts, rounded up to whole 4-byte words.

    Args:
        op: the bench's --op.
        size: the table's size.
        per_host: the ranks on each host.

    Returns:
        Bytes per rank.
    """
    host_bytes = ops.COLLECTIVES[op].link_bytes(size, 2, per_host)
    return -(-int(host_bytes) // per_host // 4) * 4


def time_exchange(me: BenchRank, size: int) -> tuple[float, int]:
    """Seconds per raw exchange of `size`'s share (the bench's fair loop, max over ranks), and 0 wrong elements
    unless the bytes that came differ from what the partner sent (checked once).

    Args:
        me: this rank (on one of two emulated hosts, ranks host by host).
        size: the table's size.

    Returns:
        (seconds per call, wrong elements).
    """
    import torch.distributed as dist

    per_host = me.cfg.world_size // 2
    peer = partner(me.rank, per_host)
    words = share_bytes(me.cfg.op, size, per_host) // 4
    send = torch.arange(words, dtype=torch.int32) + me.rank
    got = torch.full((words,), -1, dtype=torch.int32)
    group = me.torch_group  # None: the default (gloo) group

    def exchange() -> None:
        sent = dist.isend(send, peer, group=group)
        dist.recv(got, peer, group=group)
        sent.wait()

    exchange()
    wrong = int((got != torch.arange(words, dtype=torch.int32) + peer).sum())
    return me.time(exchange, (send, got)), wrong


def add_column(me: BenchRank, size: int, timed: dict[str, tuple[float, float]]) -> None:
    """Times the raw exchange of `size` into timed["link"] where the ranks run on two emulated hosts (every
    collective's rank loop calls it before reporting its row).

    Args:
        me: this rank.
        size: the table's size.
        timed: the row's column key -> (seconds per call, wrong elements), added to.
    """
    if me.cfg.hosts == 2:
        me.progress(f"{workload.format_bytes(size)}: raw exchange between the hosts")
        timed["link"] = time_exchange(me, size)
