"""`python -m atb_ops bench`: every operator's latency and bandwidth in nccl-tests form, beside gloo and Open MPI.

What it measures and how to read it: ``python -m atb_ops bench --help`` (atb_ops.bench.cli). The files, one job
each:

- the command line: cli (flags and checks; --op picks the bench), ops (every fact about each --op);
- the collectives bench's parent: driver (libraries take turns size by size), config (the run), columns (which
  columns and title), rounds (median, best and spread of the rounds), report (the nccl-tests table), plot;
- shared by every bench: launcher (the one rank launcher), timing (the one timing loop), table (the one table
  printer), pages (the same memory for every library), rank_group (what every rank does around its calls);
- the ranks of the collectives bench: ranks (execute_out), ranks_alltoallv and ranks_collectives (one size),
  c10d (--api c10d), mpi and mpi_ranks (Open MPI's job);
- the data: workload (sizes, alltoallv layouts, self-checking payload), collectives (the other collectives' data
  and expected results), plan (one size on one rank);
- benches with a table of their own: quant (quant_allreduce), linear_parallel.
"""

from atb_ops.bench.cli import main

__all__ = ["main"]
