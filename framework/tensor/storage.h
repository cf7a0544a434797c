// Reference-counted, 64-byte aligned raw memory block behind tensors.
#pragma once

#include <cstddef>
#include <memory>

namespace rota {

/// An owned, 64-byte aligned byte buffer; shared between tensor views with std::shared_ptr.
class Storage {
 public:
  /// Allocates `nbytes` (uninitialised). Zero bytes gives a valid, empty storage.
  explicit Storage(size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
};

using StoragePtr = std::shared_ptr<Storage>;

}  // namespace rota
