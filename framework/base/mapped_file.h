// Read-only memory mapping of a whole file (checkpoints, prepared token shards).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace rota {

/// Maps a file read-only for its lifetime. An empty file gives an empty view. Throws naming
/// the file when it cannot be opened or mapped.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return static_cast<const unsigned char*>(data_); }
  size_t size() const { return size_; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rota
