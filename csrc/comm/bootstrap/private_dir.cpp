#include "comm/bootstrap/private_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/status.h"

namespace atb_ops {
namespace {

// Closes a file descriptor on every path out of a scope.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

std::string modeText(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string describeStat(const struct stat& st) {
  std::string kind;
  if (S_ISDIR(st.st_mode)) {
    kind = "a directory";
  } else if (S_ISLNK(st.st_mode)) {
    kind = "a symbolic link";
  } else if (S_ISFIFO(st.st_mode)) {
    kind = "a FIFO";
  } else if (S_ISSOCK(st.st_mode)) {
    kind = "a socket";
  } else if (S_ISREG(st.st_mode)) {
    kind = "a regular file";
  } else {
    kind = "a special file";
  }
  return kind + " owned by uid " + std::to_string(st.st_uid) + " with mode " + modeText(st.st_mode);
}

}  // namespace

std::string describePath(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "nothing" : std::string(std::strerror(errno));
  return describeStat(st);
}

std::string privateDirPath(const Options& options) {
  return options.shmDir + "/atb_ops-" + std::to_string(::getuid());
}

std::string privateDir(const Options& options) {
  const uid_t uid = ::getuid();
  const std::string dir = privateDirPath(options);
  if (::mkdir(dir.c_str(), 0700) != 0) {
    ATB_CHECK(errno == EEXIST, ERROR_RT_FAIL, "cannot create atb_ops' private folder '", dir,
              "': ", std::strerror(errno), " (set ATB_OPS_SHM_DIR to a writable tmpfs folder)");
  }
  // Checked on every use: the name may have been created by someone else before we ever ran.
  FdGuard fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  struct stat st{};
  const bool opened = fd.fd >= 0 && ::fstat(fd.fd, &st) == 0;
  ATB_CHECK(opened && S_ISDIR(st.st_mode) && st.st_uid == uid, ERROR_RT_FAIL, "atb_ops' private folder '", dir, "' is ",
            describePath(dir), ", not a directory of uid ", uid,
            "; remove it (it is not atb_ops') or set ATB_OPS_SHM_DIR elsewhere");
  if ((st.st_mode & 077) != 0) {
    // Ours but opened up by hand: close it again rather than trust names others could have placed.
    ATB_CHECK(::fchmod(fd.fd, 0700) == 0, ERROR_RT_FAIL, "cannot restore mode 0700 on '", dir, "' (mode ",
              modeText(st.st_mode), "): ", std::strerror(errno));
  }
  return dir;
}

std::vector<std::string> namesStartingWith(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  return names;
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

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      dev_(o.dev_),
      ino_(o.ino_) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(base_, size_);
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    dev_ = o.dev_;
    ino_ = o.ino_;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

MappedFile MappedFile::create(const std::string& path, size_t bytes) {
  FdGuard fd{::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600)};
  ATB_CHECK(fd.fd >= 0, ERROR_RT_FAIL, "cannot create '", path, "': ", std::strerror(errno), " (", describePath(path),
            " is there)");
  // The umask cannot widen 0600, but fchmod makes the mode explicit whatever the umask.
  ::fchmod(fd.fd, 0600);
  // Reserved, not only sized: on a full tmpfs a sized file maps fine and the first touch of a missing page
  // kills the process with SIGBUS. posix_fallocate fails here instead, and says so.
  if (const int err = ::posix_fallocate(fd.fd, 0, static_cast<off_t>(bytes)); err != 0) {
    ::unlink(path.c_str());
    struct statvfs fs{};
    const std::string dir = path.substr(0, path.rfind('/'));
    const bool known = ::statvfs(dir.c_str(), &fs) == 0;
    ATB_FAIL(ERROR_RT_FAIL, "cannot reserve ", bytes, " bytes for '", path, "': ", std::strerror(err), " (",
             known ? std::to_string(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize) : std::string("unknown"),
             " bytes free in '", dir, "'; free space there or point ATB_OPS_SHM_DIR at a larger tmpfs)");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::unlink(path.c_str());
    ATB_FAIL(ERROR_RT_FAIL, "mmap of '", path, "' (", bytes, " bytes) failed: ", std::strerror(err));
  }
  struct stat st{};
  ::fstat(fd.fd, &st);
  MappedFile f;
  f.path_ = path;
  f.base_ = base;
  f.size_ = bytes;
  f.dev_ = st.st_dev;
  f.ino_ = st.st_ino;
  return f;
}

MappedFile MappedFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO planted at the name must not block the open.
  FdGuard fd{::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (fd.fd < 0) {
    ATB_CHECK(errno == ENOENT, ERROR_RT_FAIL, "cannot open '", path, "': ", std::strerror(errno), " (",
              describePath(path), " is there)");
    return MappedFile();
  }
  struct stat st{};
  ATB_CHECK(::fstat(fd.fd, &st) == 0, ERROR_RT_FAIL, "fstat of '", path, "' failed: ", std::strerror(errno));
  ATB_CHECK(S_ISREG(st.st_mode) && st.st_uid == ::getuid() && (st.st_mode & 077) == 0, ERROR_RT_FAIL, "'", path,
            "' is ", describeStat(st), ", not a 0600 regular file of uid ", ::getuid(), "; remove it");
  if (st.st_size <= 0) return MappedFile();  // being created by its owner: not there yet
  const size_t bytes = static_cast<size_t>(st.st_size);
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  ATB_CHECK(base != MAP_FAILED, ERROR_RT_FAIL, "mmap of '", path, "' failed: ", std::strerror(errno));
  MappedFile f;
  f.path_ = path;
  f.base_ = base;
  f.size_ = bytes;
  f.dev_ = st.st_dev;
  f.ino_ = st.st_ino;
  return f;
}

void unlinkIfSame(const MappedFile& file, const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == file.device() &&
      st.st_ino == file.inode()) {
    ::unlink(path.c_str());
  }
}

}  // namespace atb_ops
