// Where corpora are looked for and fetched to: the search path, the cache, download switches.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace rota::data {

/// One directory of the search path; a corpus NAME lives in <dir>/NAME/.
struct SearchDir {
  std::filesystem::path dir;
  /// Why it is on the path, for error messages ("$ROTA_DATA", "user cache", ...).
  std::string origin;
};

struct DataOptions {
  /// Directories searched in order.
  std::vector<SearchDir> search_path;
  /// Where downloads go (<cache_dir>/NAME/FILE) and where verified checksums are recorded.
  std::filesystem::path cache_dir;
  /// Download a registered file into cache_dir when no directory has it.
  bool allow_download = true;
  /// Check every registered file against its sha256 (recorded by size and mtime, so a file
  /// is hashed once, not on every run).
  bool verify_checksums = true;
};

/// $XDG_CACHE_HOME/rota/data, or ~/.cache/rota/data when XDG_CACHE_HOME is unset or empty.
std::filesystem::path default_cache_dir();

/// The search path and cache from the environment, in this order:
///   1. each directory of $ROTA_DATA (colon-separated; empty entries skipped);
///   2. the user cache directory (default_cache_dir());
///   3. ../shared/data relative to the current directory, when it exists;
///   4. ../shared/data relative to the source tree Rota was built from, when it exists and is
///      not the same directory as 3.
/// Downloads are disabled when $ROTA_OFFLINE is set to anything but "" or "0".
DataOptions default_data_options();

}  // namespace rota::data
