// The per-user folder every node-local name of atb_ops lives in: <ATB_OPS_SHM_DIR>/atb_ops-<uid>/, mode
// 0700, owned by this user and checked on every use, so no other user can create, swap or read a name in
// it. Segments (seg.*), rendezvous records (rdv.*), their temporaries (tmp.*), rank claims (clm.*) and
// two-jobs verdicts (amb.*, job_census.h) live there, each a 0600 regular file opened without following links.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/options.h"

namespace atb_ops {

// The folder for `options` (created on first use); raises ERROR_RT_FAIL naming the path and what is wrong
// with it (not a folder, a link, another owner, ...).
std::string privateDir(const Options& options);
// Its path alone, nothing created or checked (doctor).
std::string privateDirPath(const Options& options);

// The names in `dir` that start with `prefix` (no path), in no particular order; empty when unreadable.
std::vector<std::string> namesStartingWith(const std::string& dir, const std::string& prefix);

// 128 random bits as 32 hex characters (getrandom): names nobody can guess.
std::string randomToken();

// What sits at a path, for messages: "nothing", "a directory", "a symbolic link", "a regular file owned
// by uid 0 with mode 0644", ...
std::string describePath(const std::string& path);

// A regular file of this user mapped shared into this process (RAII): segments and rendezvous records.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // Creates `path` exclusively (O_EXCL, O_NOFOLLOW), mode 0600, zero-filled, `bytes` long.
  static MappedFile create(const std::string& path, size_t bytes);
  // Maps an existing file if it is a regular file of this user with mode 0600 (never through a link);
  // an invalid MappedFile when nothing is there; raises ERROR_RT_FAIL when something else is there.
  static MappedFile open(const std::string& path);

  bool valid() const { return base_ != nullptr; }
  void* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  dev_t device() const { return dev_; }
  ino_t inode() const { return ino_; }

 private:
  std::string path_;
  void* base_ = nullptr;
  size_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// Removes `path` if it is still the file (device, inode) that `file` mapped; never anything else.
void unlinkIfSame(const MappedFile& file, const std::string& path);

}  // namespace atb_ops
