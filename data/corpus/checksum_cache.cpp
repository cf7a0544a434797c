// The verified-checksum record: one TSV line per verified file.
#include "data/corpus/checksum_cache.h"

#include <chrono>
#include <sstream>
#include <vector>

#include "data/util/sha256.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

struct FileStamp {
  std::string path;
  int64_t size = -1;
  int64_t mtime_ns = 0;
};

FileStamp stamp_of(const std::filesystem::path& file) {
  FileStamp stamp;
  std::error_code error;
  stamp.path = std::filesystem::absolute(file, error).lexically_normal().string();
  stamp.size = static_cast<int64_t>(std::filesystem::file_size(file, error));
  if (error) stamp.size = -1;
  const auto mtime = std::filesystem::last_write_time(file, error);
  stamp.mtime_ns =
      error
          ? 0
          : std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  return stamp;
}

std::string record_line(const std::string& sha256, const FileStamp& stamp) {
  return sha256 + "\t" + std::to_string(stamp.size) + "\t" + std::to_string(stamp.mtime_ns) + "\t" +
         stamp.path;
}

std::vector<std::string> read_records(const std::filesystem::path& record_file) {
  std::vector<std::string> lines;
  std::error_code error;
  if (!std::filesystem::exists(record_file, error)) return lines;
  try {
    std::istringstream in(read_file(record_file));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) lines.push_back(line);
    }
  } catch (...) {
    lines.clear();  // an unreadable record only costs a re-hash
  }
  return lines;
}

// The path column of a record line (after the third tab).
std::string_view record_path(std::string_view line) {
  size_t pos = 0;
  for (int tabs = 0; tabs < 3; ++tabs) {
    pos = line.find('\t', pos);
    if (pos == std::string_view::npos) return {};
    ++pos;
  }
  return line.substr(pos);
}

}  // namespace

bool verify_file_checksum(const std::filesystem::path& file, const std::string& expected,
                          const std::filesystem::path& cache_dir, std::string* actual) {
  const FileStamp stamp = stamp_of(file);
  const std::filesystem::path record_file = cache_dir / kChecksumRecordFile;
  std::vector<std::string> records =
      cache_dir.empty() ? std::vector<std::string>{} : read_records(record_file);
  const std::string wanted = record_line(expected, stamp);
  for (const std::string& line : records) {
    if (line == wanted) return true;
  }
  const std::string got = sha256_file(file);
  if (got != expected) {
    if (actual) *actual = got;
    return false;
  }
  if (!cache_dir.empty()) {
    std::string updated;
    for (const std::string& line : records) {
      if (record_path(line) != stamp.path) updated += line + "\n";
    }
    updated += wanted + "\n";
    try {
      std::filesystem::create_directories(cache_dir);
      write_file_atomically(record_file, updated);
    } catch (...) {
      // Best effort: a read-only cache just means hashing again next time.
    }
  }
  return true;
}

}  // namespace rota::data
