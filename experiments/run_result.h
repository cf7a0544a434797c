// What one ablation run produced (training, evaluations, extrapolation); its result.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rota::experiments {

/// Metric name -> value ("loss", "ppl", "accuracy", "mcc").
using MetricMap = std::map<std::string, double>;

/// The mean test loss of the positions first … last (1-based, within a window) over `tokens`
/// scored tokens (`rota eval --by-position`); loss is NaN when no window reaches them.
struct PositionLoss {
  int64_t first = 1;
  int64_t last = 1;
  int64_t tokens = 0;
  double loss = 0;
};

/// The first stage's primary metric on the test split at multiplier × the training length.
struct ContextResult {
  int multiplier = 1;
  int64_t length = 0;           // tokens per window
  std::optional<double> value;  // absent: not applicable (see note)
  std::string note;             // why there is no value ("n/a: learned absolute positions ...")
  /// Causal LMs: the loss per position bucket (powers of two) at this length; empty otherwise
  /// (and in results of a Rota that did not record them).
  std::vector<PositionLoss> positions{};
};

/// One training stage of a run and its evaluations.
struct StageResult {
  std::string kind;     // causal_lm, masked_lm, classifier
  std::string primary;  // ppl, accuracy or mcc
  std::filesystem::path run_dir;
  int64_t parameters = 0;
  int64_t steps = 0;
  double train_time_s = 0;                        // training wall time, summed over resumes
  double tokens_per_s = 0;                        // median of the logged training windows
  int64_t best_valid_step = 0;                    // the evaluation that picked checkpoints/best
  MetricMap best_valid;                           // its metrics
  std::vector<std::pair<int64_t, double>> curve;  // (step, primary metric) of every evaluation
  std::string test_split;  // "test", or the validation split when test has no labels
  std::filesystem::path evaluated_checkpoint;
  MetricMap test;                       // evaluation of evaluated_checkpoint on test_split
  std::vector<ContextResult> contexts;  // first stage only, one per context multiplier
};

/// One variant × seed.
struct RunResult {
  std::string variant;
  uint64_t seed = 0;
  std::vector<std::string> overrides;  // the variant's own overrides
  /// kOtherShard: not this shard's run (`rota ablate --shard K/N`) and no record of it yet.
  enum class Status { kOk, kFailed, kInterrupted, kNotRun, kOtherShard } status = Status::kNotRun;
  std::string error;         // failed: what happened, with the log to read
  bool reused = false;       // read back from an earlier rota ablate
  int64_t eval_batches = 0;  // the --eval-batches the evaluations used
  std::vector<StageResult> stages;
  // Provenance (kept in the run's record, not in result.json):
  std::string cpu;                    // the CPU model that ran it; empty: not recorded
  std::filesystem::path record_file;  // read from this record rather than from OUT/runs
};

/// "ok", "failed", "interrupted", "not run", "other shard".
std::string status_name(RunResult::Status status);

/// result.json text of a finished run (ordered keys, indented).
std::string result_to_json(const RunResult& result);
/// Parses result_to_json's text; std::nullopt when it is not a complete result.
std::optional<RunResult> result_from_json(const std::string& text);

}  // namespace rota::experiments
