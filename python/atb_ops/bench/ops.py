"""The bench's `--op` registry: every fact about each operation in one place.

The collectives (alltoallv, allreduce, reduce_scatter, allgather, broadcast) share one driver, one rank process
and one table; each row of COLLECTIVES says what every library calls for it and how the table reads its sizes.
The benches with a table of their own (quant_allreduce, linear_parallel) are named in OWN_BENCHES with the
module whose ``main`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Collective:
    """One collective as the bench times it, in every library.

    Attributes:
        operation: the ATB operation timed through ``execute_out``.
        distributed: the ``atb_ops.distributed`` function (``--api distributed``).
        torch_call: torch.distributed's call: timed on gloo, and on the backend "atb_ops" with ``--api c10d``.
        mpi_call: Open MPI's call (atb_ops.bench.mpi_ranks).
        size_meaning: what the table's ``size`` column counts (nccl-tests' convention).
        bus_formula: busbw / algbw as the title writes it; ``bus_factor`` computes it.
        reduces: whether it sums (it then needs a dtype with arithmetic).
        param: the ATB param beyond rank, rankSize, rankRoot and backend.
        link_share: across hosts, the least share of ``size`` each host must send to the others (``link_bytes``
            computes it), written with H hosts of L ranks each.
    """

    operation: str
    distributed: str
    torch_call: str
    mpi_call: str
    size_meaning: str
    bus_formula: str
    reduces: bool = False
    param: dict[str, Any] = field(default_factory=dict)
    link_share: str = "(H-1)/H"

    def link_bytes(self, size: int, hosts: int, per_host: int) -> float:
        """The bytes the busiest host must send to the other hosts, whatever the algorithm: what a link's rate
        turns into the least time the collective can take across hosts.

        Args:
            size: the table's size (``size_meaning``).
            hosts: H, the hosts.
            per_host: L, the ranks on each.

        Returns:
            L(H-1)/H x size for alltoallv (each rank's share for other hosts), 2(H-1)/H x size for allreduce
            (a reduce-scatter and an all-gather between hosts), size for broadcast (the root's host sends it
            whole), (H-1)/H x size for reduce_scatter and allgather; 0 on one host.
        """
        if hosts <= 1:
            return 0.0
        share = {"L(H-1)/H": per_host * (hosts - 1) / hosts, "2(H-1)/H": 2 * (hosts - 1) / hosts, "1": 1.0,
                 "(H-1)/H": (hosts - 1) / hosts}[self.link_share]
        return share * size

    def bus_factor(self, world_size: int) -> float:
        """nccl-tests' busbw / algbw: the share of the data that crosses between ranks.

        Args:
            world_size: the ranks taking part.

        Returns:
            1 for broadcast, (n-1)/n for alltoallv, allgather and reduce_scatter, 2(n-1)/n for allreduce
            (0 for the latter three on one rank: nothing crosses).
        """
        if self.bus_formula == "1":
            return 1.0
        if world_size <= 1:
            return 0.0
        if self.bus_formula == "2(n-1)/n":
            return 2.0 * (world_size - 1) / world_size
        return (world_size - 1) / world_size


COLLECTIVES: dict[str, Collective] = {
    "alltoallv": Collective("AllToAllVV2Operation", "all_to_all_v", "all_to_all_single", "MPI_Alltoallv",
                            "bytes of the busiest rank", "(n-1)/n", link_share="L(H-1)/H"),
    "allreduce": Collective("AllReduceOperation", "all_reduce", "all_reduce", "MPI_Allreduce",
                            "bytes of a rank's input (= its output)", "2(n-1)/n", reduces=True,
                            param={"allReduceType": "sum"}, link_share="2(H-1)/H"),
    "reduce_scatter": Collective("ReduceScatterOperation", "reduce_scatter", "reduce_scatter_tensor",
                                 "MPI_Reduce_scatter_block",
                                 "bytes of a rank's input (it receives 1/n of them reduced)", "(n-1)/n",
                                 reduces=True, param={"reduceType": "sum"}),
    "allgather": Collective("AllGatherOperation", "all_gather", "all_gather_into_tensor", "MPI_Allgather",
                            "bytes of a rank's output (it sends 1/n of them)", "(n-1)/n"),
    "broadcast": Collective("BroadcastOperation", "broadcast", "broadcast", "MPI_Bcast", "bytes of the buffer", "1",
                            link_share="1"),
}

# --op -> the module whose main(argv) runs a bench with flags and a table of its own.
OWN_BENCHES: dict[str, str] = {
    "quant_allreduce": "atb_ops.bench.quant",
    "linear_parallel": "atb_ops.bench.linear_parallel",
}
