// How the ranks of one shm communicator come to share a control segment: rankRoot creates it (a file in
// the private folder under a random name), hands the name to the others through the bootstrap, everyone
// maps it and claims its slot, and all meet there; the root then removes the name, so a later crash leaves
// nothing behind. Then every rank maps every peer's shared-memory arena and all agree whether that worked.
#pragma once

#include <string>
#include <vector>

#include "comm/bootstrap/private_dir.h"
#include "comm/comm_config.h"
#include "comm/shm/arena.h"
#include "comm/shm/peer_memory.h"
#include "comm/shm/segment_layout.h"

namespace atb_ops::shm {

struct Attachment {
  MappedFile file;
  SegmentView view;
  // Waiters spin when every rank has a CPU of its own (from the union of all ranks' affinity masks),
  // and yield when ranks outnumber CPUs.
  bool spin = true;
  // Every rank mapped every peer's arena.
  bool arenasShared = false;
  // Every rank may read (and write) every peer process's memory with process_vm_readv/writev; false on a
  // ptrace-restricted host, where large messages are staged in the arena instead (the same on every rank).
  bool crossMemory = true;
  std::string crossMemoryError;              // why this rank could not, for messages
  std::vector<PeerArenaMapping> peerArenas;  // [rank]; empty for this process's own arena
};

// Creates or joins the segment for `config` and fills `memory` (peer pids, arena mappings; its copies are
// counted in `stats`). Raises ERROR_COMM_TIMEOUT naming the ranks that did not join within ATB_OPS_TIMEOUT.
Attachment attachSegment(const CommConfig& config, PeerMemory& memory, CommStats* stats);

}  // namespace atb_ops::shm
