// Glob matching and expansion of split paths (files, directories, patterns).
#include "data/source/path_patterns.h"

#include <algorithm>
#include <string>

#include "framework/base/error.h"

namespace fs = std::filesystem;

namespace rota::data {

namespace {

// Matches one character c against the set starting at pattern[pos] == '['; sets end to the
// index after ']' or npos for an unterminated set (then '[' is literal).
bool match_set(std::string_view pattern, size_t pos, char c, size_t& end) {
  size_t i = pos + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  for (; i < pattern.size() && (first || pattern[i] != ']'); first = false) {
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      if (pattern[i] <= c && c <= pattern[i + 2]) matched = true;
      i += 3;
    } else {
      if (pattern[i] == c) matched = true;
      ++i;
    }
  }
  if (i >= pattern.size()) {
    end = std::string_view::npos;
    return false;
  }
  end = i + 1;
  return matched != negate;
}

bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

}  // namespace

bool has_wildcard(std::string_view path) {
  return path.find_first_of("*?[") != std::string_view::npos;
}

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative matching with one backtrack point for the last '*' (linear in practice).
  size_t p = 0, n = 0;
  size_t star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
      continue;
    }
    if (p < pattern.size()) {
      if (pattern[p] == '?') {
        ++p;
        ++n;
        continue;
      }
      if (pattern[p] == '[') {
        size_t end = 0;
        const bool matched = match_set(pattern, p, name[n], end);
        if (end == std::string_view::npos) {
          if (name[n] == '[') {
            ++p;
            ++n;
            continue;
          }
        } else if (matched) {
          p = end;
          ++n;
          continue;
        }
      } else if (pattern[p] == name[n]) {
        ++p;
        ++n;
        continue;
      }
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool is_readable_regular_file(const fs::path& path, std::string_view what) {
  std::error_code error;
  const bool regular = fs::is_regular_file(path, error);
  ROTA_CHECK(!error || error == std::errc::no_such_file_or_directory,
             "data: {}: {} cannot be read ({}){}; remove it or make it point at a file", what,
             path.string(), error.message(),
             error == std::errc::too_many_symbolic_link_levels
                 ? ": a symbolic link that leads back to itself"
                 : "");
  return regular;
}

std::vector<fs::path> expand_split_paths(std::string_view spec, FileFormat format,
                                         std::string_view what) {
  ROTA_CHECK(!spec.empty(), "data: {} is empty", what);
  std::vector<fs::path> files;
  std::error_code error;
  if (has_wildcard(spec)) {
    const fs::path pattern(spec);
    std::vector<fs::path> current = {pattern.is_absolute() ? pattern.root_path() : fs::path()};
    for (const fs::path& component : pattern.relative_path()) {
      const std::string part = component.string();
      std::vector<fs::path> next;
      for (const fs::path& base : current) {
        if (!has_wildcard(part)) {
          next.push_back(base / component);
          continue;
        }
        const fs::path dir = base.empty() ? fs::path(".") : base;
        if (!fs::is_directory(dir, error)) continue;
        for (const auto& entry : fs::directory_iterator(dir, error)) {
          const std::string name = entry.path().filename().string();
          if (is_hidden(entry.path()) && part[0] != '.') continue;
          if (glob_match(part, name)) next.push_back(base / name);
        }
      }
      current = std::move(next);
    }
    for (const fs::path& path : current) {
      const bool regular = is_readable_regular_file(path, what);
      if (regular) files.push_back(path);
    }
    std::sort(files.begin(), files.end());
    ROTA_CHECK(!files.empty(), "data: {}: the pattern '{}' matches no file", what, spec);
    return files;
  }
  const fs::path path(spec);
  ROTA_CHECK(fs::exists(path, error),
             "data: {}: '{}' does not exist (a file, a directory or a "
             "glob pattern such as \"corpus/*.txt\"; relative paths start at the working "
             "directory {})",
             what, spec, fs::current_path().string());
  if (fs::is_directory(path, error)) {
    for (const auto& entry : fs::directory_iterator(path, error)) {
      if (is_hidden(entry.path()) || !extension_fits(entry.path(), format)) continue;
      const bool regular = is_readable_regular_file(entry.path(), what);
      if (regular) files.push_back(entry.path());
    }
    ROTA_CHECK(!error, "data: {}: cannot list the directory '{}': {}", what, spec, error.message());
    std::sort(files.begin(), files.end());
    ROTA_CHECK(!files.empty(), "data: {}: directory '{}' has no {} files ({})", what, spec,
               file_format_name(format),
               format == FileFormat::kAuto    ? ".txt .text .jsonl .ndjson .csv .tsv"
               : format == FileFormat::kText  ? ".txt .text"
               : format == FileFormat::kJsonl ? ".jsonl .ndjson"
               : format == FileFormat::kCsv   ? ".csv"
                                              : ".tsv");
    return files;
  }
  ROTA_CHECK(fs::is_regular_file(path, error), "data: {}: '{}' is not a regular file", what, spec);
  return {path};
}

}  // namespace rota::data
