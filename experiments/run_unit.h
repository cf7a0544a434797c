// One variant × seed of an ablation: train each stage, evaluate, write result.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "experiments/run_plan.h"
#include "experiments/run_result.h"

namespace rota::experiments {

/// How the children of a run are started and evaluated.
struct UnitSettings {
  std::string program;       // the executable started for `train` and `eval`
  std::string program_name;  // its argv[0] ("rota")
  std::vector<std::pair<std::string, std::string>> env;  // e.g. OMP_NUM_THREADS
  int64_t eval_batches = 0;                              // --batches of every evaluation
  std::vector<int> context_multipliers;                  // extrapolation of the first stage
  int (*stop_signal)() = nullptr;  // non-zero: stop (forwarded to the running child)
  /// A finished run's record goes to record_path(records_out, variant, seed); empty: none.
  std::filesystem::path records_out;
  std::string rota_version;  // for the record: the children's `--version`
  std::string cpu;           // for the record: this machine's CPU model
};

/// Files of a run directory.
inline constexpr char kResultFile[] = "result.json";      // the finished run's results
inline constexpr char kProgressFile[] = "progress.json";  // stages trained, evaluations done
inline constexpr char kConsoleLog[] = "console.log";      // stdout + stderr of its children

/// Runs one variant × seed, resuming whatever an earlier rota ablate left:
/// - a run whose result.json exists (evaluated with the same eval_batches and multipliers) is
///   read back and nothing is started;
/// - a stage marked trained in progress.json is not started again; any other stage runs as
///   `rota train ... --resume`, which continues from its latest checkpoint (or starts);
/// - evaluations already in progress.json are not repeated.
/// Before a stage's existing checkpoints are used, its recorded recipe must equal the planned
/// one (else the run fails, saying what differs: the ablation changed since). The test
/// evaluation uses checkpoints/best on evaluation_split(); the first stage is also evaluated
/// at every multiplier × its sequence length via `rota eval --context` ("n/a" where the
/// encoding cannot run at that length). A failing child fails this run only; the returned
/// result says why and where the log is. Never throws for a run's own failure. A finished run
/// (trained now, or read back from result.json) also leaves its record (run_record.h) when
/// settings.records_out is set; one read back from an older Rota's result.json has no CPU.
RunResult run_unit(const PlannedRun& run, const std::vector<std::string>& variant_overrides,
                   const UnitSettings& settings);

/// The last line of a log worth showing: the last "error: ..." line, else the last non-empty one.
std::string last_error_line(const std::filesystem::path& log);

}  // namespace rota::experiments
