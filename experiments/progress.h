// Progress of a running ablation: how far each running run is, and the ETA of the whole.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rota::experiments {

/// The last optimizer step RUN/metrics.jsonl records (a train or valid line); 0 when the file
/// is missing or has none. Reads only the end of the file.
int64_t last_logged_step(const std::filesystem::path& run_dir);

/// What the ETA is computed from.
struct EtaInput {
  size_t total = 0;                      // runs in the ablation
  size_t done = 0;                       // finished, failed or read back from an earlier run
  std::vector<double> finished_seconds;  // wall time of each run this invocation completed
  /// Per running run: (seconds since it started, fraction done in [0, 1]).
  std::vector<std::pair<double, double>> running;
  int jobs = 1;  // runs at once
};

/// Seconds until every run is done: the runs left (those not started, plus the unfinished
/// fraction of the running ones) × the time a run takes (the mean of finished_seconds, else
/// the running runs' elapsed / fraction where that fraction is at least 5%) / the runs at once
/// (jobs, at most the runs left). nullopt while nothing tells the time of a run; 0 when done.
std::optional<double> eta_seconds(const EtaInput& input);

/// "45 s", "12 min", "1 h 05 min".
std::string format_duration(double seconds);

}  // namespace rota::experiments
