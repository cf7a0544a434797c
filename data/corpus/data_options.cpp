// The default search path and cache directory, from the environment.
#include "data/corpus/data_options.h"

#include <cstdlib>
#include <string_view>

#ifndef ROTA_DATA_SOURCE_TREE
#define ROTA_DATA_SOURCE_TREE ""
#endif

namespace rota::data {

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool same_directory(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  return std::filesystem::equivalent(a, b, error);
}

}  // namespace

std::filesystem::path default_cache_dir() {
  const std::string xdg = environment("XDG_CACHE_HOME");
  if (!xdg.empty()) return std::filesystem::path(xdg) / "rota" / "data";
  const std::string home = environment("HOME");
  return std::filesystem::path(home.empty() ? "." : home) / ".cache" / "rota" / "data";
}

DataOptions default_data_options() {
  DataOptions options;
  const std::string rota_data = environment("ROTA_DATA");
  size_t pos = 0;
  while (pos <= rota_data.size()) {
    size_t end = rota_data.find(':', pos);
    if (end == std::string::npos) end = rota_data.size();
    if (end > pos) {
      options.search_path.push_back({rota_data.substr(pos, end - pos), "$ROTA_DATA"});
    }
    pos = end + 1;
  }
  options.cache_dir = default_cache_dir();
  options.search_path.push_back({options.cache_dir, "user cache"});

  std::error_code error;
  const std::filesystem::path from_cwd =
      std::filesystem::absolute("../shared/data", error).lexically_normal();
  const bool cwd_exists = !error && std::filesystem::is_directory(from_cwd, error);
  if (cwd_exists) {
    options.search_path.push_back({from_cwd, "../shared/data relative to the current directory"});
  }
  const std::string_view source_tree = ROTA_DATA_SOURCE_TREE;
  if (!source_tree.empty()) {
    const std::filesystem::path from_source =
        (std::filesystem::path(source_tree) / ".." / "shared" / "data").lexically_normal();
    if (std::filesystem::is_directory(from_source, error) &&
        !(cwd_exists && same_directory(from_cwd, from_source))) {
      options.search_path.push_back({from_source, "../shared/data relative to the source tree"});
    }
  }
  const std::string offline = environment("ROTA_OFFLINE");
  options.allow_download = offline.empty() || offline == "0";
  return options;
}

}  // namespace rota::data
