// A POSIX shared-memory segment mapped into this process (RAII), and the names it lives under.
#pragma once

#include <cstddef>
#include <string>

namespace atb_ops::shm {

// Every file atb_ops puts in /dev/shm starts with this, then the uid: "atb_ops.<uid>."
std::string userPrefix();

// 128 random bits as 32 hex characters (getrandom): segment names nobody can guess.
std::string randomToken();

class MappedSegment {
 public:
  MappedSegment() = default;
  MappedSegment(MappedSegment&& other) noexcept;
  MappedSegment& operator=(MappedSegment&& other) noexcept;
  MappedSegment(const MappedSegment&) = delete;
  MappedSegment& operator=(const MappedSegment&) = delete;
  ~MappedSegment();

  // Creates /dev/shm/<name> exclusively, mode 0600, zero-filled, `bytes` long.
  static MappedSegment create(const std::string& name, size_t bytes);
  // Maps an existing segment; an empty MappedSegment when it does not exist.
  static MappedSegment open(const std::string& name);

  bool valid() const { return base_ != nullptr; }
  void* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  MappedSegment(std::string name, void* base, size_t size) : name_(std::move(name)), base_(base), size_(size) {}
  std::string name_;
  void* base_ = nullptr;
  size_t size_ = 0;
};

// Removes the name; mappings stay valid until unmapped. Missing names are ignored.
void unlinkSegment(const std::string& name);

}  // namespace atb_ops::shm
