// metrics.jsonl: one JSON object per line ({"step":..,"split":"train","loss":..}), flushed per
// line.
#pragma once

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "framework/base/append_file.h"

namespace rota::io {

/// A metric value: integer, floating point or string. Non-finite numbers are written as null
/// (JSON has no NaN or infinity).
struct MetricValue {
  template <std::integral T>
  requires(!std::same_as<T, bool>) MetricValue(T v) : value(static_cast<int64_t>(v)) {}
  template <std::floating_point T>
  MetricValue(T v) : value(static_cast<double>(v)) {}
  MetricValue(std::string v) : value(std::move(v)) {}
  MetricValue(const char* v) : value(std::string(v)) {}

  std::variant<int64_t, double, std::string> value;
};

/// Fields of one line, in the order they are written: {{"step", 100}, {"loss", 3.2}}.
using MetricRecord = std::vector<std::pair<std::string, MetricValue>>;

/// The JSON text of a record (one line, no newline). Throws on a duplicate key.
std::string metric_record_json(const MetricRecord& record);

/// Appends records to a metrics.jsonl file. Each line goes out whole on an O_APPEND descriptor
/// (AppendFile), so it is visible to readers (`tail -f`, plotting scripts) immediately. A line
/// that cannot be written (a full disk) is rolled back, so the file always ends with a whole
/// line, and write() throws rota::Error naming the file and the system error.
class MetricsWriter {
 public:
  /// Opens `path` for appending (creating it and its directory).
  explicit MetricsWriter(const std::filesystem::path& path);
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void write(const MetricRecord& record);
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  AppendFile file_;
};

/// For --resume: rewrites `path` (atomically) without the lines whose "step" is greater than
/// `step`, i.e. what a crashed run logged after the checkpoint it resumes from, so the resumed
/// run's lines do not duplicate them. Lines that do not parse (a torn last line) are dropped
/// too. A missing file is left missing.
void truncate_metrics_after_step(const std::filesystem::path& path, int64_t step);

}  // namespace rota::io
