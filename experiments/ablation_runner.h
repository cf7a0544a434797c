// `rota ablate`: every variant × seed as child processes, then results.csv, results.md and plots.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/run_plan.h"
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
  /// Run only this share of the plan; the other runs come from records or are left.
  Shard shard;
  /// Records of runs made elsewhere (files, or directories searched for them): a planned run
  /// they answer is not run again (run_record.h). OUT/records is always read.
  std::vector<std::filesystem::path> records;
  /// Discard OUT's runs and records made with a different recipe than the plan's instead of
  /// refusing to start.
  bool start_over = false;
};

struct AblationOutcome {
  std::filesystem::path out;
  std::vector<RunResult> results;  // variants outer, seeds inner
  int finished = 0;                // status ok
  int failed = 0;
  int unfinished = 0;    // interrupted or not started (a stop was requested)
  int other_shards = 0;  // left to other shards, with no record yet
  int from_records = 0;  // read from records (this directory's or --records) instead of run
  bool stopped = false;
};

/// Loads the ablation (RecipeError on a bad file or a variant whose recipe does not load),
/// takes OUT/.lock (rota::Error when another rota ablate holds it), reads the records (OUT's
/// and `records`; rota::Error for a damaged one) and, before anything is written, refuses
/// with RecipeError naming the runs and their differing recipe fields when OUT holds runs or
/// records made with another recipe than the plan's (start_over: deletes those instead).
/// Then copies the ablation file to OUT/ablation.txtpb; every planned run a record answers is
/// taken from it (copied into OUT/records when it came from elsewhere); the rest of the
/// shard's runs run (run_unit, which leaves each finished run's record in OUT/records;
/// `jobs` at once; the first
/// SIGINT/SIGTERM is forwarded to the running children, which checkpoint and stop, and no new
/// run starts; a second one kills), then writes results.csv, results.md and the plots from
/// whatever finished. Logs to stderr and OUT/ablate.log: each run's start and end with the
/// ablation's ETA, and every progress_seconds the step of each running run and the ETA.
/// With from_csv, nothing runs: the results are read from that file (results_from_csv) and
/// only the reports, plots and the ablation file's copy are written.
AblationOutcome run_ablation(const AblationRunOptions& options);

}  // namespace rota::experiments
