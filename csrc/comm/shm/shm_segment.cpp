#include "comm/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/status.h"

namespace atb_ops::shm {
namespace {

// Closes a file descriptor on every path out of a scope.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

std::string shmName(const std::string& name) {
  return "/" + name;
}

}  // namespace

std::string userPrefix() {
  return "atb_ops." + std::to_string(::getuid()) + ".";
}

std::string randomToken() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    ATB_CHECK(n > 0 || errno == EINTR, ERROR_INTERNAL_ERROR, "getrandom failed: ", std::strerror(errno));
    if (n > 0) got += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

MappedSegment::MappedSegment(MappedSegment&& o) noexcept
    : name_(std::move(o.name_)), base_(std::exchange(o.base_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedSegment& MappedSegment::operator=(MappedSegment&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(base_, size_);
    name_ = std::move(o.name_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedSegment::~MappedSegment() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

MappedSegment MappedSegment::create(const std::string& name, size_t bytes) {
  FdGuard fd{::shm_open(shmName(name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
  ATB_CHECK(fd.fd >= 0, ERROR_RT_FAIL, "shm_open(create) '/dev/shm/", name, "' failed: ", std::strerror(errno));
  // The umask cannot widen 0600, but fchmod makes the mode explicit whatever the umask.
  ::fchmod(fd.fd, 0600);
  if (::ftruncate(fd.fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    ::shm_unlink(shmName(name).c_str());
    ATB_FAIL(ERROR_RT_FAIL, "ftruncate of '/dev/shm/", name, "' to ", bytes, " bytes failed: ", std::strerror(err));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::shm_unlink(shmName(name).c_str());
    ATB_FAIL(ERROR_RT_FAIL, "mmap of '/dev/shm/", name, "' (", bytes, " bytes) failed: ", std::strerror(err));
  }
  return MappedSegment(name, base, bytes);
}

MappedSegment MappedSegment::open(const std::string& name) {
  FdGuard fd{::shm_open(shmName(name).c_str(), O_RDWR, 0)};
  if (fd.fd < 0) return MappedSegment();
  struct stat st{};
  if (::fstat(fd.fd, &st) != 0 || st.st_size <= 0 || st.st_uid != ::getuid()) return MappedSegment();
  void* base = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  if (base == MAP_FAILED) return MappedSegment();
  return MappedSegment(name, base, static_cast<size_t>(st.st_size));
}

void unlinkSegment(const std::string& name) {
  ::shm_unlink(shmName(name).c_str());
}

}  // namespace atb_ops::shm
