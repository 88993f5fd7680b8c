// The process's shared-memory arena: CPU tensors whose memory the peers of every shm communicator
// have mapped, so a peer copies to or from them with a plain memcpy (memory bandwidth) instead of
// process_vm_readv (which pins and copies page by page, about half of that).
//
// One memfd per process, reserved once (ATB_OPS_SHM_ARENA bytes of address space; pages are allocated
// when first touched and kept for reuse, except a freed block's of kReturnPagesFrom or more), carved into
// blocks by a first-fit allocator. Tensors come from atb_ops.shm_empty(), and from execute() outputs on the
// shm backend below kReturnPagesFrom; when the arena is off, full or
// unavailable they are ordinary tensors and everything still works (through process_vm_readv).
// Arena tensors are shared memory: after fork() parent and child see the same bytes (as after
// Tensor.share_memory_()), and the child allocates no more arena blocks.
#pragma once

#include <ATen/core/Tensor.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace atb_ops::shm {

class Arena {
 public:
  // Freed blocks of at least this size return their pages to the system; smaller ones stay resident for the
  // next call, as glibc keeps freed heap memory below its mmap threshold (which stops at 32 MiB). Returning
  // them from 1 MiB made every call re-fault its fresh outputs page by page: the quantised all-reduce of
  // 16 MiB (arena intermediates each call) went from 4.8 to 13 ms.
  static constexpr size_t kReturnPagesFrom = size_t{32} << 20;

  // The process's arena, created on first use; never destroyed (tensors may outlive everything else).
  static Arena& instance();

  bool enabled() const { return base_ != nullptr; }
  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  int fd() const { return fd_; }

  // A block of at least `bytes` (4 KiB aligned), or nullptr when the arena is off or full.
  void* allocate(size_t bytes);
  void release(void* p);
  // Whether [p, p + bytes) lies inside the arena.
  bool contains(const void* p, size_t bytes) const;
  size_t usedBytes() const;

 private:
  Arena();
  char* base_ = nullptr;
  size_t bytes_ = 0;
  int fd_ = -1;
  pid_t owner_ = 0;  // the process that created it; a fork()ed child allocates elsewhere
  mutable std::mutex mutex_;
  std::map<size_t, size_t> free_;  // offset -> size, coalesced
  std::map<size_t, size_t> used_;  // offset -> size
};

// An uninitialised CPU tensor in the arena; an ordinary at::empty tensor when the arena cannot serve it.
at::Tensor emptyShared(c10::IntArrayRef sizes, const at::TensorOptions& options);

// A peer process's arena mapped into this one (RAII).
class PeerArenaMapping {
 public:
  PeerArenaMapping() = default;
  PeerArenaMapping(PeerArenaMapping&& other) noexcept;
  PeerArenaMapping& operator=(PeerArenaMapping&& other) noexcept;
  PeerArenaMapping(const PeerArenaMapping&) = delete;
  PeerArenaMapping& operator=(const PeerArenaMapping&) = delete;
  ~PeerArenaMapping();

  // Maps `bytes` of the arena memfd `fd` of process `pid` (through /proc/<pid>/fd/<fd>); invalid on failure.
  static PeerArenaMapping map(pid_t pid, int fd, size_t bytes);

  bool valid() const { return base_ != nullptr; }
  char* base() const { return base_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace atb_ops::shm
