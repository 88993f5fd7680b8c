// Which job a process belongs to, so that two jobs on one host using the same commDomain never meet in a
// node-local rendezvous, while the ranks of one job always do.
#pragma once

#include <string>

#include "core/options.h"
#include "core/params.h"

namespace atb_ops {

// The job key of a node-local rendezvous, from what proves a job when something does: ATB_OPS_JOB_ID;
// in multi-thread mode this process (the ranks are its threads); MASTER_ADDR:MASTER_PORT (+TORCHELASTIC_RUN_ID);
// a launcher's job id (PMIx namespace, Open MPI's jobid, a Slurm step). Else the launching parent process
// (pid and start time): spawn, torchrun and mpirun all give ranks one parent, but one parent may run two jobs,
// so such a key is only a guess that job_census.h checks before anyone pairs.
std::string defaultJobKey(const Options& options, CommMode mode);

// Whether a job key is (or joins, after a '|') the parent-process guess rather than a proof.
bool parentScoped(const std::string& jobKey);

// 64-bit FNV-1a: names files from keys, never security (segment names are random).
uint64_t fnv1a(const std::string& text);

}  // namespace atb_ops
