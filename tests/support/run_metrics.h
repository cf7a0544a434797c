// Reading a training run's metrics.jsonl from tests: the records of one split, in order.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rota::testing {

/// The records of `<run>/metrics.jsonl` whose "split" is `split` ("train" or "valid"), in file
/// order; empty when the file does not exist. Throws when a line is not JSON or has no "split".
std::vector<nlohmann::json> metrics_lines(const std::filesystem::path& run,
                                          const std::string& split);

}  // namespace rota::testing
