// Which job a process belongs to, so that two jobs on one host using the same commDomain never meet in a
// node-local rendezvous, while the ranks of one job always do.
#pragma once

#include <string>

#include "core/options.h"
#include "core/params.h"

namespace atb_ops {

// ATB_OPS_JOB_ID if set; else MASTER_ADDR:MASTER_PORT (+TORCHELASTIC_RUN_ID) if set; else the launching
// parent process (pid and start time: spawn, torchrun and mpirun all give ranks one parent). In
// multi-thread mode the ranks are threads, so the job is this process.
std::string defaultJobKey(const Options& options, CommMode mode);

// 64-bit FNV-1a: names files from keys, never security (segment names are random).
uint64_t fnv1a(const std::string& text);

}  // namespace atb_ops
