#include "comm/shm/arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ops/empty.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Storage.h>
#include <c10/util/strides.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

#include "core/options.h"
#include "core/status.h"

namespace atb_ops::shm {
namespace {

constexpr size_t kBlockAlign = 4096;

size_t roundUpTo(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

// Half the physical memory, at most 64 GiB: address space only, pages come when used.
int64_t defaultArenaBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  const int64_t half = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 2 : int64_t{1} << 30;
  return std::min<int64_t>(half, int64_t{64} << 30);
}

}  // namespace

Arena& Arena::instance() {
  static Arena* arena = new Arena();  // leaked on purpose: deleters of live tensors may run at exit
  return *arena;
}

Arena::Arena() {
  const int64_t wanted = readOptions().shmArenaBytes.value_or(defaultArenaBytes());
  if (wanted <= 0) return;
  const size_t bytes = roundUpTo(static_cast<size_t>(wanted), kBlockAlign);
  const int fd = ::memfd_create("atb_ops_arena", MFD_CLOEXEC);
  if (fd < 0) return;  // no memfd here: the arena stays off and everything takes the other paths
  void* base = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  }
  if (base == MAP_FAILED) {
    ::close(fd);
    return;
  }
  base_ = static_cast<char*>(base);
  bytes_ = bytes;
  fd_ = fd;
  owner_ = ::getpid();
  free_.emplace(0, bytes);
}

void* Arena::allocate(size_t bytes) {
  // A fork()ed child shares the mapping with its parent but has a copy of the allocator: it must not
  // hand out blocks the parent may hand out too.
  if (!enabled() || ::getpid() != owner_) return nullptr;
  const size_t want = roundUpTo(std::max<size_t>(bytes, 1), kBlockAlign);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < want) continue;
    const size_t offset = it->first;
    const size_t rest = it->second - want;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + want, rest);
    used_.emplace(offset, want);
    return base_ + offset;
  }
  return nullptr;
}

void Arena::release(void* p) {
  const size_t offset = static_cast<size_t>(static_cast<char*>(p) - base_);
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto used = used_.find(offset);
    if (used == used_.end()) return;
    size = used->second;
    used_.erase(used);
  }
  // Large blocks give their pages back (to every process that maps the arena), as freeing an ordinary
  // tensor of that size does; otherwise outputs the caller dropped would stay resident for the process's
  // life. Done before the block is free again, so nobody can be writing into it.
  if (size >= kReturnPagesFrom) ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, size);
  std::lock_guard<std::mutex> lock(mutex_);
  size_t start = offset;
  // Coalesce with the free neighbours on both sides.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
}

bool Arena::contains(const void* p, size_t bytes) const {
  const auto* c = static_cast<const char*>(p);
  return enabled() && c >= base_ && bytes <= bytes_ && static_cast<size_t>(c - base_) <= bytes_ - bytes;
}

size_t Arena::usedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& kv : used_) total += kv.second;
  return total;
}

at::Tensor emptyShared(c10::IntArrayRef sizes, const at::TensorOptions& options) {
  TORCH_CHECK(options.device().is_cpu(), "emptyShared: shared-memory tensors live on the CPU, got ", options.device());
  int64_t numel = 1;
  for (int64_t s : sizes) {
    ATB_CHECK(s >= 0, ERROR_INVALID_PARAM, "shm_empty: negative size ", s, " in ", sizes);
    numel *= s;
  }
  const size_t bytes = static_cast<size_t>(numel) * c10::elementSize(c10::typeMetaToScalarType(options.dtype()));
  Arena& arena = Arena::instance();
  void* p = arena.allocate(bytes);
  if (p == nullptr) return at::empty(sizes, options);
  // Resizable like an ordinary tensor's storage (torch ops with out= resize their output): growing moves
  // the data to the CPU allocator's memory and gives the block back.
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes,
                       c10::DataPtr(
                           p, p, [](void* q) { Arena::instance().release(q); }, c10::Device(c10::kCPU)),
                       c10::GetCPUAllocator(), /*resizable=*/true);
  return at::empty({0}, options).set_(storage, 0, sizes, c10::contiguous_strides(sizes));
}

PeerArenaMapping::PeerArenaMapping(PeerArenaMapping&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

PeerArenaMapping& PeerArenaMapping::operator=(PeerArenaMapping&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(base_, bytes_);
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

PeerArenaMapping::~PeerArenaMapping() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

PeerArenaMapping PeerArenaMapping::map(pid_t pid, int fd, size_t bytes) {
  PeerArenaMapping m;
  if (pid <= 0 || fd < 0 || bytes == 0) return m;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(pid), fd);
  const int mine = ::open(path, O_RDWR | O_CLOEXEC);
  if (mine < 0) return m;
  struct stat st{};
  void* base = MAP_FAILED;
  // The size check guards against a reused descriptor number that is not the peer's arena any more.
  if (::fstat(mine, &st) == 0 && static_cast<size_t>(st.st_size) == bytes && st.st_uid == ::getuid()) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, mine, 0);
  }
  ::close(mine);
  if (base == MAP_FAILED) return m;
  m.base_ = static_cast<char*>(base);
  m.bytes_ = bytes;
  return m;
}

}  // namespace atb_ops::shm
