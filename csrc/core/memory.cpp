#include "core/memory.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#ifdef __linux__
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/options.h"

#if defined(__linux__) && !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25  // Linux 6.1; older C libraries lack the name, older kernels answer EINVAL
#endif

namespace atb_ops {
namespace {

// glibc serves every allocation of 32 MiB or more with a fresh mmap (its dynamic mmap threshold stops
// there), so such a buffer is always untouched memory whose every page would fault; smaller ones are
// usually recycled heap memory, already mapped, where the advice would only cost a system call.
constexpr size_t kFreshMinBytes = size_t{32} << 20;

bool enabled() {
  static const bool on = readOptions().hugePages;  // ATB_OPS_HUGEPAGES, through the one options reader
  return on;
}

// The size of a transparent huge page, 0 where the kernel has none or THP is set to "never".
uintptr_t hugePageBytes() {
  static const uintptr_t bytes = []() -> uintptr_t {
    uintptr_t size = 0;
    std::ifstream pmd("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    std::string mode;
    std::ifstream enabledFile("/sys/kernel/mm/transparent_hugepage/enabled");
    if (!(pmd >> size) || !std::getline(enabledFile, mode) || mode.find("[never]") != std::string::npos) return 0;
    return size;
  }();
  return bytes;
}

// [first, last): the whole `unit`-aligned units inside [begin, begin + bytes); madvise works on whole pages,
// and the partial ones at the ends hold other allocations.
struct Units {
  uintptr_t first;
  uintptr_t last;
  size_t bytes() const { return last > first ? last - first : 0; }
};
Units wholeUnits(const void* data, size_t bytes, uintptr_t unit) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  return Units{(begin + unit - 1) & ~(unit - 1), (begin + bytes) & ~(unit - 1)};
}

}  // namespace

void adviseHugePages(const at::Tensor& t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (!t.defined() || !t.device().is_cpu() || !enabled()) return;
  const size_t bytes = t.nbytes();
  if (bytes < kFreshMinBytes) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const Units pages = wholeUnits(t.data_ptr(), bytes, page);
  // Advice only: EINVAL (THP compiled out) or anything else just leaves the default pages.
  if (pages.bytes() > 0) (void)::madvise(reinterpret_cast<void*>(pages.first), pages.bytes(), MADV_HUGEPAGE);
#else
  (void)t;
#endif
}

Collapse tryCollapseHugePages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = hugePageBytes();
  if (huge == 0 || data == nullptr) return {};
  const Units pages = wholeUnits(data, bytes, huge);
  if (pages.bytes() == 0) return {};
  void* range = reinterpret_cast<void*>(pages.first);
  // MADV_HUGEPAGE first, so that pages the buffer loses later (swap, migration) come back huge.
  (void)::madvise(range, pages.bytes(), MADV_HUGEPAGE);
  if (::madvise(range, pages.bytes(), MADV_COLLAPSE) == 0) return {pages.bytes(), false};
  // EAGAIN: a page was briefly busy (pinned by a peer's copy, locked, under migration); ENOMEM: no free huge
  // page even after compaction. Both can pass; EINVAL (no MADV_COLLAPSE) and the rest do not.
  return {0, errno == EAGAIN || errno == ENOMEM || errno == EBUSY};
#else
  (void)data;
  (void)bytes;
  return {};
#endif
}

uint64_t collapseHugePages(const void* data, size_t bytes) {
  return tryCollapseHugePages(data, bytes).bytes;
}

uint64_t ReusedBufferPages::onUse(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < kMinBytes) return 0;
  const uintptr_t huge = hugePageBytes();
  if (huge == 0) return 0;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  ++clock_;
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.begin == begin && e.bytes == bytes; });
  if (it == entries_.end()) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.lastUse < b.lastUse; });
    *oldest = Entry{begin, bytes, clock_};
    return 0;
  }
  it->lastUse = clock_;
  if (it->done) return 0;
  const Collapse result = tryCollapseHugePages(data, bytes);
  it->done = !result.transient || ++it->attempts >= kAttempts;
  return result.bytes;
#else
  (void)data;
  (void)bytes;
  return 0;
#endif
}

void copyContiguous(const at::Tensor& dst, const at::Tensor& src) {
  TORCH_INTERNAL_ASSERT(dst.is_contiguous() && src.is_contiguous() && dst.nbytes() == src.nbytes(),
                        "copyContiguous: ", dst.sizes(), " <- ", src.sizes());
  if (src.nbytes() > 0 && dst.data_ptr() != src.data_ptr()) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), src.nbytes());
  }
}

}  // namespace atb_ops
