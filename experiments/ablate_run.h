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
};

/// Runs the ablation (run_ablation) and prints how many runs finished, failed or are
/// unfinished, and where results.md is. Exit code 0 when every run finished, else 1.
int run_ablate(const AblateRequest& request);

}  // namespace rota::experiments
