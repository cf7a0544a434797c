// An append-only file of whole records: a failed append leaves no partial record behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace rota {

/// Appends records (metrics.jsonl lines, log lines, TFRecords) to a file opened with O_APPEND.
/// Each append writes the whole record, continuing after short writes. If a write fails (a full
/// disk: ENOSPC; a file-size limit: EFBIG; EIO), the file is truncated back to its length before
/// the record, so it still ends with the previous whole record, and rota::Error is thrown naming
/// the file, the record's size and the system error. The file has one writer (the process that
/// holds the run directory's lock); a concurrent appender's records could be cut by that
/// truncation.
class AppendFile {
 public:
  /// Opens `path` for appending, creating it (mode 0644) and its parent directories.
  explicit AppendFile(std::filesystem::path path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  /// Writes `record` entirely, or throws having left the file as it was (see above).
  void append(std::string_view record);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace rota
