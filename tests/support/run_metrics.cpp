// Reading a run's metrics.jsonl (see run_metrics.h).
#include "tests/support/run_metrics.h"

#include <fstream>

namespace rota::testing {

std::vector<nlohmann::json> metrics_lines(const std::filesystem::path& run,
                                          const std::string& split) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record.at("split") == split) lines.push_back(std::move(record));
  }
  return lines;
}

}  // namespace rota::testing
