// Node-local rendezvous: how ranks of one job find the segment their root created, and only theirs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/params.h"
#include "core/process.h"

namespace atb_ops::shm {

// The job this process belongs to, so that two jobs on one host using the same commDomain never meet:
// ATB_OPS_JOB_ID if set; else MASTER_ADDR:MASTER_PORT (+TORCHELASTIC_RUN_ID) if set; else the launching
// parent process (pid and start time: spawn, torchrun and mpirun all give ranks one parent). In
// multi-thread mode the ranks are threads, so the job is this process.
std::string defaultJobKey(CommMode mode);

// 64-bit FNV-1a: keys file names, never security (the segment name is random).
uint64_t fnv1a(const std::string& text);

struct RendezvousRecord {
  std::string segmentName;
  pid_t rootPid = 0;
  uint64_t rootStartTime = 0;
};

// /dev/shm/atb_ops.<uid>.rdv.<hash of key>
std::string rendezvousPath(uint64_t keyHash);

// Written to a private temporary and renamed into place, so readers see all of it or nothing.
void publishRendezvous(const std::string& path, const RendezvousRecord& record);

// The record at path, if it is there, whole, and written by a root that is still alive.
std::optional<RendezvousRecord> readLiveRendezvous(const std::string& path);

}  // namespace atb_ops::shm
