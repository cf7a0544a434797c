// Scratch directories and the removal of those killed processes left (see scratch_directory.h).
#include "framework/base/scratch_directory.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "framework/base/error.h"

namespace fs = std::filesystem;

namespace rota {
namespace {

fs::path default_base() {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);  // $TMPDIR when it names a directory
  return error ? fs::path("/tmp") : base;
}

// A positive decimal number spanning all of `text` (no sign, no leading zeros past a single 0).
bool parse_decimal(std::string_view text, int64_t& value) {
  if (text.empty() || text.size() > 18) return false;
  if (text.size() > 1 && text[0] == '0') return false;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

}  // namespace

int64_t scratch_directory_pid(std::string_view name, std::string_view prefix) {
  if (prefix.empty() || name.size() <= prefix.size() + 1 ||
      name.substr(0, prefix.size()) != prefix || name[prefix.size()] != '-') {
    return 0;
  }
  const std::string_view rest = name.substr(prefix.size() + 1);
  const size_t dash = rest.find('-');
  if (dash == std::string_view::npos) return 0;
  int64_t pid = 0, counter = 0;
  if (!parse_decimal(rest.substr(0, dash), pid) || !parse_decimal(rest.substr(dash + 1), counter)) {
    return 0;
  }
  return pid > 0 && pid <= 0x7fffffff ? pid : 0;  // a pid_t; never 0 or negative (groups)
}

ScratchDirectory::ScratchDirectory(std::string_view prefix)
    : ScratchDirectory(prefix, default_base()) {}

ScratchDirectory::ScratchDirectory(std::string_view prefix, const fs::path& base) {
  static std::atomic<int64_t> counter{0};
  path_ = base / fmt::format("{}-{}-{}", prefix, ::getpid(), counter++);
  // A leftover of this name belonged to a dead process that had our PID: it is stale.
  std::error_code ignored;
  fs::remove_all(path_, ignored);
  if (::mkdir(path_.c_str(), 0700) != 0) {
    fail("cannot create the scratch directory {}: {}", path_.string(), std::strerror(errno));
  }
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

int remove_stale_scratch_directories(std::string_view prefix) {
  return remove_stale_scratch_directories(prefix, default_base());
}

int remove_stale_scratch_directories(std::string_view prefix, const fs::path& base) {
  int removed = 0;
  std::error_code error;
  fs::directory_iterator it(base, error);
  if (error) return 0;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error) break;
    const fs::path path = it->path();
    const int64_t pid = scratch_directory_pid(path.filename().string(), prefix);
    if (pid == 0 || pid == ::getpid()) continue;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid()) {
      continue;  // a symbolic link, a file, or someone else's
    }
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or EPERM)
    std::error_code ignored;
    if (fs::remove_all(path, ignored) > 0 && !ignored) ++removed;
  }
  return removed;
}

}  // namespace rota
