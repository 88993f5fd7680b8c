#include "core/memory.h"

#include <cstdint>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/options.h"

namespace atb_ops {
namespace {

// glibc serves every allocation of 32 MiB or more with a fresh mmap (its dynamic mmap threshold stops
// there), so such a buffer is always untouched memory whose every page would fault; smaller ones are
// usually recycled heap memory, already mapped, where the advice would only cost a system call.
constexpr size_t kMinBytes = size_t{32} << 20;

bool enabled() {
  static const bool on = readOptions().hugePages;  // ATB_OPS_HUGEPAGES, through the one options reader
  return on;
}

}  // namespace

void adviseHugePages(const at::Tensor& t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (!t.defined() || !t.device().is_cpu() || !enabled()) return;
  const size_t bytes = t.nbytes();
  if (bytes < kMinBytes) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  const uintptr_t first = (begin + page - 1) & ~(page - 1);
  const uintptr_t last = (begin + bytes) & ~(page - 1);
  // Advice only: EINVAL (THP compiled out) or anything else just leaves the default pages.
  if (last > first) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)t;
#endif
}

}  // namespace atb_ops
