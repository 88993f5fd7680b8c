// Large CPU buffers and the page size behind them.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace atb_ops {

// Asks Linux to back a CPU tensor's pages with transparent huge pages before they are first written:
// a fresh 32 MiB output then takes 16 page faults instead of 8192 (3-4x faster to fill on the VMs
// measured in docs/quant.md). Only for tensors of at least 32 MiB (always fresh mappings, see memory.cpp),
// where THP is enabled ("madvise" or "always"); a no-op elsewhere, on other devices and systems, and under
// ATB_OPS_HUGEPAGES=0.
void adviseHugePages(const at::Tensor& t);

// dst = src for contiguous tensors of the same byte size, by memcpy on this thread. Communication paths copy this
// way rather than with ATen's copy_, which hands a large copy to its intra-op thread pool: those threads then spin
// (OpenMP) on the cores the ranks and their communication threads need. A 256 KiB gloo all-reduce of 2 ranks on 2
// cores took 20 ms with one copy_ in its path, 0.7 ms without.
void copyContiguous(const at::Tensor& dst, const at::Tensor& src);

// Collapses the whole transparent huge pages inside [data, data + bytes) onto huge pages (MADV_HUGEPAGE, then
// MADV_COLLAPSE); returns the bytes collapsed, 0 where THP is off or the kernel refuses. What ReusedBufferPages
// does to a reused buffer, also offered to the benchmark so every library it times gets the same memory.
uint64_t collapseHugePages(const void* data, size_t bytes);

// collapseHugePages with the kernel's answer: `transient` where it refused for a reason that can pass (a page
// briefly pinned or busy, no free huge page at that moment), so a later attempt may succeed.
struct Collapse {
  uint64_t bytes = 0;
  bool transient = false;
};
Collapse tryCollapseHugePages(const void* data, size_t bytes);

// Buffers that a caller passes call after call (execute_out's inputs and outputs): the second time one of
// at least kMinBytes is seen at the same address with the same size, its whole huge pages are collapsed onto
// transparent huge pages (MADV_HUGEPAGE, then MADV_COLLAPSE, Linux 6.1+). Peers copy such buffers with
// process_vm_readv, which pins every 4 KiB page it copies: with 2 MiB pages that work and the TLB misses of
// both copies shrink (2 ranks, 64 MiB AllToAllVV2: ~11.4 -> ~8.8 ms per call here). The collapse is paid
// once per buffer (5-20 ms per 64 MiB, up to ~170 ms when the kernel must first compact memory), and never
// for a buffer seen only once; a buffer freed and allocated again at the same address is not collapsed
// again. A refusal that can pass (tryCollapseHugePages' `transient`) is retried on the buffer's next uses, up
// to kAttempts tries in all. Advice only: where THP is off or the kernel refuses, the pages stay as they were. The
// caller checks ATB_OPS_HUGEPAGES (Options::hugePages, read with its communicator's options).
class ReusedBufferPages {
 public:
  static constexpr size_t kMinBytes = size_t{4} << 20;
  static constexpr int kAttempts = 3;

  // Records one use of [data, data + bytes); returns the bytes this call collapsed (0 almost always).
  uint64_t onUse(const void* data, size_t bytes);

 private:
  struct Entry {
    uintptr_t begin = 0;
    size_t bytes = 0;
    uint64_t lastUse = 0;  // clock_ of its latest use: the least recent entry makes room for a new one
    int attempts = 0;      // transient refusals so far
    bool done = false;     // collapsed, or refused for good (or kAttempts times)
  };
  std::array<Entry, 16> entries_{};
  uint64_t clock_ = 0;
};

}  // namespace atb_ops
