// A file mapped read-only into memory (mmap), unmapped when the last owner goes.
#pragma once

#include <cstddef>
#include <filesystem>

namespace rota::data {

/// The whole file, mapped read-only and shared: pages are read on demand and can be dropped by
/// the kernel at any time, so mapping a file costs address space, not resident memory. An
/// empty file maps to nothing (data() == nullptr). Errors throw rota::Error naming the file.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rota::data
