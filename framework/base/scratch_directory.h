// Scratch directories named PREFIX-PID-N under $TMPDIR: removed on scope exit, and those of dead
// processes removed at the next start.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace rota {

/// A fresh, empty directory `<base>/<prefix>-<pid>-<n>` for one use (base: $TMPDIR, else /tmp;
/// the process id and a counter keep concurrent users apart), removed with everything in it
/// when the object is destroyed — on return and on an exception alike. A process killed
/// meanwhile leaves it behind; remove_stale_scratch_directories removes it at the next start.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(std::string_view prefix);
  ScratchDirectory(std::string_view prefix, const std::filesystem::path& base);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Removes the scratch directories under `base` (default $TMPDIR, else /tmp) that a killed
/// process left: only directories (not symbolic links) named exactly `<prefix>-<pid>-<n>` (both
/// decimal), owned by this user, whose process no longer exists (kill(pid, 0) fails with ESRCH).
/// A directory whose PID is alive — the owner still running, or the number reused — is kept.
/// Never throws; returns how many directories were removed.
int remove_stale_scratch_directories(std::string_view prefix);
int remove_stale_scratch_directories(std::string_view prefix, const std::filesystem::path& base);

/// The PID in a scratch directory name `<prefix>-<pid>-<n>`, or 0 when the name is anything else.
int64_t scratch_directory_pid(std::string_view name, std::string_view prefix);

}  // namespace rota
