#include "comm/shm/peer_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/reduce_kernels.h"

namespace atb_ops::shm {

void PeerMemory::reset(int32_t n, CommStats* stats) {
  stats_ = stats;
  pids_.assign(static_cast<size_t>(n), 0);
  arenas_.assign(static_cast<size_t>(n), ArenaRange{});
  self_ = ::getpid();
}

void PeerMemory::setArena(int32_t peer, uint64_t arenaBase, uint64_t arenaBytes, char* mapped) {
  arenas_[peer] = ArenaRange{arenaBase, arenaBytes, mapped};
}

void PeerMemory::dropArenas() {
  for (auto& a : arenas_) a = ArenaRange{};
}

bool PeerMemory::direct(int32_t peer, uint64_t addr, uint64_t bytes) const {
  return pids_[peer] == self_ || inArena(peer, addr, bytes);
}

bool PeerMemory::inArena(int32_t peer, uint64_t addr, uint64_t bytes) const {
  const ArenaRange& a = arenas_[peer];
  return a.mapped != nullptr && addr >= a.base && bytes <= a.bytes && addr - a.base <= a.bytes - bytes;
}

char* PeerMemory::local(int32_t peer, uint64_t addr) const {
  if (pids_[peer] == self_) return reinterpret_cast<char*>(addr);
  return arenas_[peer].mapped + (addr - arenas_[peer].base);
}

namespace {

bool crossCopy(pid_t pid, int32_t peer, bool write, char* local, uint64_t remote, uint64_t bytes, std::string& error) {
  while (bytes > 0) {
    iovec mine{local, bytes};
    iovec theirs{reinterpret_cast<void*>(remote), bytes};
    const ssize_t n =
        write ? ::process_vm_writev(pid, &mine, 1, &theirs, 1, 0) : ::process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      error = std::string(write ? "process_vm_writev to" : "process_vm_readv from") + " rank " + std::to_string(peer) +
              " (pid " + std::to_string(pid) + ") failed: " + std::strerror(errno) +
              (errno == EPERM ? " (refused after the probe at creation allowed it: did ptrace's scope change?)" : "");
      return false;
    }
    local += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

void PeerMemory::copyLocal(void* dst, const void* src, uint64_t bytes, bool streaming) const {
  if (copyMaybeStreaming(static_cast<char*>(dst), static_cast<const char*>(src), bytes, streaming)) {
    stats_->nontemporalBytes.fetch_add(bytes, std::memory_order_relaxed);
  }
}

bool PeerMemory::read(int32_t peer, uint64_t remote, void* dst, uint64_t bytes, std::string& error,
                      bool streaming) const {
  if (bytes == 0) return true;
  if (direct(peer, remote, bytes)) {
    copyLocal(dst, local(peer, remote), bytes, streaming);
    stats_->memcpyBytes.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  stats_->vmBytes.fetch_add(bytes, std::memory_order_relaxed);
  return crossCopy(pids_[peer], peer, false, static_cast<char*>(dst), remote, bytes, error);
}

bool PeerMemory::write(int32_t peer, const void* src, uint64_t remote, uint64_t bytes, std::string& error,
                       bool streaming) const {
  if (bytes == 0) return true;
  stats_->pushedBytes.fetch_add(bytes, std::memory_order_relaxed);
  if (direct(peer, remote, bytes)) {
    copyLocal(local(peer, remote), src, bytes, streaming);
    stats_->memcpyBytes.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  stats_->vmBytes.fetch_add(bytes, std::memory_order_relaxed);
  return crossCopy(pids_[peer], peer, true, const_cast<char*>(static_cast<const char*>(src)), remote, bytes, error);
}

}  // namespace atb_ops::shm
