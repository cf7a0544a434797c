// `rota ablate`: every variant × seed of an ablation file, then the report; resumable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota::experiments {

struct AblateRequest {
  std::string ablation;      // the ablation file (.txtpb)
  std::string out;           // output directory; empty: runs/ablations/<ablation name>
  int jobs = 1;              // runs at once
  int64_t eval_batches = 0;  // limit every test/extrapolation evaluation; 0: whole splits
  /// The program run for each training and evaluation; empty: this executable
  /// (/proc/self/exe). Tests point it at the built `rota`.
  std::string rota_binary;
  /// Rebuild the reports from this results.csv instead of running (see AblationRunOptions).
  std::string from_csv;
  std::vector<std::string> overrides;  // --set / --unset applied to every run
  std::string shard;                   // "K/N": run only that share; empty: every run
  std::vector<std::string> records;    // --records: record files or directories of them
  bool start_over = false;             // --start-over: discard OUT's runs of another recipe
};

/// Runs the ablation (run_ablation) and prints how many runs finished, failed or are
/// unfinished or left to other shards, and where results.md is. Exit code 0 when every run
/// of the shard (of the plan without --shard) finished, else 1.
int run_ablate(const AblateRequest& request);

}  // namespace rota::experiments
