// Test helpers for the data layer: files, env overrides, shared data (and the shared TempDir).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "data/corpus/data_options.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::data::testing {

using rota::testing::TempDir;

/// Writes bytes to path (creating parent directories).
inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Sets (or unsets, with nullopt) an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// ../shared/data next to the source tree (the real datasets), or empty when absent.
inline std::filesystem::path shared_data_dir() {
  const std::filesystem::path dir =
      (std::filesystem::path(ROTA_SOURCE_DIR) / ".." / "shared" / "data").lexically_normal();
  return std::filesystem::is_directory(dir) ? dir : std::filesystem::path();
}

/// Options that find corpora only in `shared` (see shared_data_dir), never download, and cache
/// under `cache_dir`.
inline DataOptions shared_data_options(const std::filesystem::path& shared,
                                       const std::filesystem::path& cache_dir) {
  DataOptions options;
  options.search_path = {{shared, "shared"}};
  options.cache_dir = cache_dir;
  options.allow_download = false;
  return options;
}

}  // namespace rota::data::testing
