// The `rota` subcommands: each takes its parsed arguments and returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rota::cli {

/// Exit codes of the CLI contract: 0 success, 1 runtime failure, 2 usage or recipe error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct TrainArgs {
  std::string recipe;
  std::vector<std::string> overrides;  // --set a.b=v
  std::string out;                     // run directory; empty: runs/<name>
  bool resume = false;
  int64_t stop_after = 0;  // stop (with a checkpoint) after this step; 0: run to the end
};
int run_train(const TrainArgs& args);

struct EvalArgs {
  std::string checkpoint;  // run directory or checkpoint directory
  std::string split = "test";
  int64_t batches = 0;  // 0: the whole split
  int64_t context = 0;  // tokens per window; 0: the recipe's data.sequence_length
};
int run_eval(const EvalArgs& args);

struct GenerateArgs {
  std::string checkpoint;
  std::string prompt;
  int64_t tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 0;
  uint64_t seed = 0;
};
int run_generate(const GenerateArgs& args);

struct BenchTrainArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  int64_t steps = 10;
  int64_t warmup = 2;
  std::string dtype;  // empty: the recipe's train.dtype
};
int run_bench_train(const BenchTrainArgs& args);

struct AblateArgs {
  std::string ablation;      // the ablation file (.txtpb)
  std::string out;           // output directory; empty: runs/ablations/<ablation name>
  int jobs = 1;              // runs at once
  int64_t eval_batches = 0;  // limit every test/extrapolation evaluation; 0: whole splits
  /// The program run for each training and evaluation; empty: this executable
  /// (/proc/self/exe). Tests point it at the built `rota`.
  std::string rota_binary;
};
int run_ablate(const AblateArgs& args);

int run_data_list();
int run_data_fetch(const std::string& name);

}  // namespace rota::cli
