// atb::SVector: ATB's small vector, with ATB's interface and object layout (atb_ops' libatb.so takes it inside
// VariantPack, so a program built against ATB's own header passes the same bytes). Up to DEFAULT_SVECTOR_SIZE
// elements live inside the object; beyond that, up to MAX_SVECTOR_SIZE, on the heap. Going past
// MAX_SVECTOR_SIZE throws MaxSizeExceeded, an index past size() std::out_of_range.
// Written for atb_ops from ATB's published interface (names, signatures, sizes), not from its source.
#ifndef ATB_OPS_INCLUDE_ATB_SVECTOR_H
#define ATB_OPS_INCLUDE_ATB_SVECTOR_H

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace atb {

constexpr std::size_t MAX_SVECTOR_SIZE = 256;
constexpr std::size_t DEFAULT_SVECTOR_SIZE = 64;
constexpr bool CHECK_BOUND = true;

struct MaxSizeExceeded : public std::exception {};

template <class T>
class SVector {
 public:
  constexpr SVector() {}

  SVector(std::initializer_list<T> list) { assign(list.begin(), list.size()); }

  explicit SVector(std::size_t size, const T& value = 0) {
    grow(size);
    for (std::size_t i = 0; i < size; ++i) data()[i] = value;
    size_ = size;
  }

  SVector(const SVector<T>& other) { assign(other.data(), other.size_); }

  ~SVector() { delete[] heap_; }

  SVector& operator=(std::initializer_list<T> list) {
    assign(list.begin(), list.size());
    return *this;
  }

  SVector& operator=(const SVector& other) {
    if (this != &other) assign(other.data(), other.size_);
    return *this;
  }

  // Not noexcept (as in ATB): a full vector throws.
  void push_back(const T& val) noexcept((!CHECK_BOUND) && std::is_nothrow_assignable<T, const T&>::value) {
    grow(size_ + 1);
    data()[size_++] = val;
  }

  void insert(const std::size_t pos, const T& value) {
    if (pos > size_) throw std::out_of_range("SVector::insert: position past the end");
    grow(size_ + 1);
    T* items = data();
    for (std::size_t i = size_; i > pos; --i) items[i] = items[i - 1];
    items[pos] = value;
    ++size_;
  }

  T* begin() noexcept { return data(); }
  const T* begin() const noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* end() const noexcept { return data() + size_; }

  T& operator[](std::size_t i) { return at(i); }
  const T& operator[](std::size_t i) const { return at(i); }

  T& at(std::size_t i) {
    if (i >= size_)
      throw std::out_of_range("SVector: index " + std::to_string(i) + " >= size " + std::to_string(size_));
    return data()[i];
  }
  const T& at(std::size_t i) const {
    if (i >= size_)
      throw std::out_of_range("SVector: index " + std::to_string(i) + " >= size " + std::to_string(size_));
    return data()[i];
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  void clear() noexcept { size_ = 0; }

  T* data() noexcept { return heap_ != nullptr ? heap_ : storage_; }
  const T* data() const noexcept { return heap_ != nullptr ? heap_ : storage_; }

  // New elements (past the old size) hold whatever the storage held: ATB's behaviour, kept.
  void resize(std::size_t size) {
    grow(size);
    size_ = size;
  }

  void reserve(std::size_t size) { grow(size); }

  bool operator==(const SVector<T>& other) const {
    if (size_ != other.size_) return false;
    for (std::size_t i = 0; i < size_; ++i) {
      if (data()[i] != other.data()[i]) return false;
    }
    return true;
  }

  bool operator!=(const SVector<T>& other) const { return !(*this == other); }

  // Shorter first; equal sizes compare element by element.
  bool operator<(const SVector<T>& other) const {
    if (size_ != other.size_) return size_ < other.size_;
    for (std::size_t i = 0; i < size_; ++i) {
      if (data()[i] != other.data()[i]) return data()[i] < other.data()[i];
    }
    return false;
  }

 private:
  // Makes room for `wanted` elements: the inline storage, else the heap block of MAX_SVECTOR_SIZE.
  void grow(std::size_t wanted) {
    if (CHECK_BOUND && wanted > MAX_SVECTOR_SIZE) throw MaxSizeExceeded();
    if (wanted <= DEFAULT_SVECTOR_SIZE || heap_ != nullptr) return;
    T* block = new T[MAX_SVECTOR_SIZE]();
    for (std::size_t i = 0; i < size_; ++i) block[i] = storage_[i];
    heap_ = block;
    capacity_ = MAX_SVECTOR_SIZE;
  }

  void assign(const T* items, std::size_t count) {
    grow(count);
    T* to = data();
    for (std::size_t i = 0; i < count; ++i) to[i] = items[i];
    size_ = count;
  }

  // The order and types of these members are ATB's object layout.
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  T storage_[DEFAULT_SVECTOR_SIZE + 1] = {};
  T* heap_ = nullptr;
};

// The elements separated by commas.
template <class T>
std::ostream& operator<<(std::ostream& os, const SVector<T>& svector) {
  for (std::size_t i = 0; i < svector.size(); ++i) {
    if (i != 0) os << ",";
    os << svector.at(i);
  }
  return os;
}

}  // namespace atb

#endif  // ATB_OPS_INCLUDE_ATB_SVECTOR_H
