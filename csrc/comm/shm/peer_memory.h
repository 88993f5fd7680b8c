// Reading and writing another rank's memory: a memcpy through this process's mapping of the peer's
// shared-memory arena when the range lies in it (arena.h), a memcpy when the peer is a thread of this
// process (commMode 1), else process_vm_readv / process_vm_writev (one copy, pages pinned by the kernel).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/shm/arena.h"

namespace atb_ops::shm {

class PeerMemory {
 public:
  // `n` peers, none of whose arenas is mapped yet. Copies are counted in `stats` (which outlives this).
  void reset(int32_t n, CommStats* stats);
  void setPid(int32_t peer, pid_t pid) { pids_[peer] = pid; }
  // Peer `peer`'s arena is [arenaBase, arenaBase + arenaBytes) in its address space, mapped here at `mapped`.
  void setArena(int32_t peer, uint64_t arenaBase, uint64_t arenaBytes, char* mapped);
  void dropArenas();

  pid_t pid(int32_t peer) const { return pids_[peer]; }
  // Whether [addr, addr + bytes) of the peer is reachable with a plain memcpy.
  bool direct(int32_t peer, uint64_t addr, uint64_t bytes) const;
  // Whether that range lies in the peer's arena: the same answer on every rank (direct() is also true for
  // any address of this very process), which is what plans all ranks must agree on may use.
  bool inArena(int32_t peer, uint64_t addr, uint64_t bytes) const;
  // Where the peer's `addr` is in this process (only when direct()).
  char* local(int32_t peer, uint64_t addr) const;

  // Copies `bytes` from the peer's `remote` to `dst` / from `src` to the peer's `remote`; where that is a memcpy
  // it writes with non-temporal stores when `streaming` (process_vm_readv/writev copy in the kernel, with plain
  // stores). False with `error` set when the kernel refuses (EPERM under a strict ptrace policy, EFAULT, ...).
  bool read(int32_t peer, uint64_t remote, void* dst, uint64_t bytes, std::string& error, bool streaming = false) const;
  bool write(int32_t peer, const void* src, uint64_t remote, uint64_t bytes, std::string& error,
             bool streaming = false) const;
  // A copy within this process (a rank's message to itself), counted like the others.
  void copyLocal(void* dst, const void* src, uint64_t bytes, bool streaming) const;

 private:
  struct ArenaRange {
    uint64_t base = 0;
    uint64_t bytes = 0;
    char* mapped = nullptr;
  };
  std::vector<pid_t> pids_;
  std::vector<ArenaRange> arenas_;
  pid_t self_ = 0;
  CommStats* stats_ = nullptr;
};

}  // namespace atb_ops::shm
