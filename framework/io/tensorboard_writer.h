// TensorBoard scalar event files (events.out.tfevents.<unix_seconds>.<hostname>) without
// TensorBoard.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/base/append_file.h"

namespace rota::io {

/// Appends scalar summaries to a new event file in `log_dir` (created if needed). The first
/// record is the file_version event "brain.Event:2"; each add_* call writes one Event record
/// whole (AppendFile: a failed write is rolled back and throws), so the file is always a sequence
/// of whole records (TensorBoard reads it while training runs).
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::filesystem::path& log_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  /// One scalar, e.g. add_scalar("train/loss", 3.41, 1200). wall_time <= 0 means now.
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time = 0);
  /// Several scalars of the same step in one event.
  void add_scalars(const std::vector<std::pair<std::string, double>>& values, int64_t step,
                   double wall_time = 0);

  const std::filesystem::path& path() const { return path_; }

 private:
  void write_event(const std::string& event_bytes);

  std::filesystem::path path_;
  std::unique_ptr<AppendFile> file_;
};

}  // namespace rota::io
