// `rota ablate`: every variant × seed as child processes, then results.csv, results.md and plots.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/run_result.h"

namespace rota::experiments {

struct AblationRunOptions {
  std::filesystem::path ablation_file;
  std::vector<std::string> overrides;  // --set / --unset for every run (after the file's own)
  std::filesystem::path out;           // empty: runs/ablations/<ablation name>
  int jobs = 1;              // runs at once; each child gets OMP_NUM_THREADS = max(1, cores / jobs)
  int64_t eval_batches = 0;  // --batches of every evaluation; 0: whole splits
  std::string program;       // executable for the children (e.g. /proc/self/exe)
  std::string program_name = "rota";
  std::string command;  // the command line, for results.md
  /// Seconds between the progress lines (each running run's step, the ETA) in ablate.log.
  double progress_seconds = 60;
  /// Rebuild the reports from this results.csv instead of running anything (the runs'
  /// directories need not exist; the validation curves, which it does not hold, are left out).
  std::filesystem::path from_csv;
};

struct AblationOutcome {
  std::filesystem::path out;
  std::vector<RunResult> results;  // variants outer, seeds inner
  int finished = 0;                // status ok
  int failed = 0;
  int unfinished = 0;  // interrupted or not started (a stop was requested)
  bool stopped = false;
};

/// Loads the ablation (RecipeError on a bad file or a variant whose recipe does not load),
/// takes OUT/.lock (rota::Error when another rota ablate holds it), copies the ablation file
/// to OUT/ablation.txtpb, runs every variant × seed (run_unit; `jobs` at once; the first
/// SIGINT/SIGTERM is forwarded to the running children, which checkpoint and stop, and no new
/// run starts; a second one kills), then writes results.csv, results.md and the plots from
/// whatever finished. Logs to stderr and OUT/ablate.log: each run's start and end with the
/// ablation's ETA, and every progress_seconds the step of each running run and the ETA.
/// With from_csv, nothing runs: the results are read from that file (results_from_csv) and
/// only the reports, plots and the ablation file's copy are written.
AblationOutcome run_ablation(const AblationRunOptions& options);

}  // namespace rota::experiments
