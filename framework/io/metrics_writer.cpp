// metrics.jsonl writer (one object per line, whole lines only) and resume truncation.
#include "framework/io/metrics_writer.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::io {

std::string metric_record_json(const MetricRecord& record) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  // Not a structured binding: clang before 16 cannot capture one in the lambda below.
  for (const auto& entry : record) {
    const auto& key = entry.first;
    const auto& field = entry.second;
    ROTA_CHECK(!object.contains(key), "metrics: duplicate key '{}' in one record", key);
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, double>) {
            if (std::isfinite(v)) {
              object[key] = v;
            } else {
              object[key] = nullptr;
            }
          } else {
            object[key] = v;
          }
        },
        field.value);
  }
  return object.dump();
}

MetricsWriter::MetricsWriter(const std::filesystem::path& path) : file_(path) {}

void MetricsWriter::write(const MetricRecord& record) {
  file_.append(metric_record_json(record) + "\n");
}

void truncate_metrics_after_step(const std::filesystem::path& path, int64_t step) {
  if (!std::filesystem::exists(path)) return;
  std::istringstream lines(read_file(path));
  std::string kept;
  std::string line;
  while (std::getline(lines, line)) {
    const auto object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object()) continue;
    const auto found = object.find("step");
    if (found != object.end() && found->is_number_integer() && found->get<int64_t>() > step) {
      continue;
    }
    kept += line;
    kept += '\n';
  }
  write_file_atomically(path, kept);
}

}  // namespace rota::io
