// `rota train`: a recipe → a trained run directory, on one process or every rank of an MPI job.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/train/trainer.h"

namespace rota::app {

/// How training progress reaches stdout: a redrawn line on a terminal (auto: only when stdout is
/// a terminal and the run is not launched by mpirun, whose output is usually a file), plain
/// lines every train.log_every steps, or nothing (train.log and metrics.jsonl still get them).
enum class ProgressMode { kAuto, kPlain, kNone };

struct TrainRequest {
  std::string recipe;  // the recipe file (.txtpb)
  /// The recipe itself, when not read from a file (the Python bindings); `recipe` then only names
  /// it in messages and gives the default run name (its stem).
  std::string recipe_text;
  std::vector<std::string> overrides;  // --set a.b=v
  std::string out;                     // run directory; empty: runs/<recipe name>
  std::string program = "rota";        // how rota was invoked (argv[0]), for the resume line
  bool resume = false;                 // continue the run directory's latest checkpoint
  int64_t stop_after = 0;       // stop (with a checkpoint) after this step; 0: run to the end
  train::StepObserver on_step;  // sees every step and may stop the run; empty: none
  int64_t max_memory = 0;       // bytes the run may use (--max-memory); 0: what is available
  /// Check everything and report (model size, FLOPs per token, memory estimate, the first
  /// micro-batch and its loss) without training or writing into the run directory.
  bool dry_run = false;
  ProgressMode progress = ProgressMode::kAuto;
};

/// What a training run left: its exit code, its directory and the trainer's outcome.
struct TrainResult {
  int exit_code = 0;
  std::filesystem::path run_dir;
  train::TrainOutcome outcome;
};

/// Trains on every rank of this process's job (MPI when started by mpirun with several
/// processes, else this process alone): resolves the recipe (the same on every rank), decides
/// resume or refusal, obtains the tokenizer (rank 0 builds it and sends it to the others),
/// builds the task, optimizer and schedule, runs the trainer, and on rank 0 prints the sample
/// and the final line `split=valid loss=… step=… run=…`. Returns the exit code (exit_codes.h).
int run_training(const TrainRequest& request);

/// run_training, also returning the run directory and the outcome (the Python bindings).
TrainResult train_recipe(const TrainRequest& request);

}  // namespace rota::app
