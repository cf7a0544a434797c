// A fresh temporary directory for a test, removed with everything in it at scope exit.
#pragma once

#include <filesystem>
#include <string>

namespace rota::testing {

/// A new directory, removed with its contents on destruction. Adds a test failure when it
/// cannot be created.
class TempDir {
 public:
  /// Under $TMPDIR (or /tmp).
  TempDir();
  /// Under `base`, e.g. memory_temp_base() for runs that fsync many files.
  explicit TempDir(const std::filesystem::path& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// /dev/shm when there is one (tmpfs: fsync costs nothing, where on a busy disk a checkpoint's
/// fsyncs can take seconds), else $TMPDIR (or /tmp).
std::filesystem::path memory_temp_base();

}  // namespace rota::testing
