// Reference-counted, 64-byte aligned raw memory block behind tensors.
#pragma once

#include <cstddef>
#include <cstdint>
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

/// Bytes held by all live tensor storages, and the high-water mark since the last reset.
/// Benchmarks use it to report peak tensor memory per token.
struct StorageStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
};
StorageStats storage_stats();
/// Sets the peak to the current live bytes.
void reset_storage_peak();

}  // namespace rota
