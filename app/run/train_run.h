// `rota train`: a recipe → a trained run directory, on one process or every rank of an MPI job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota::app {

struct TrainRequest {
  std::string recipe;                  // the recipe file (.txtpb)
  std::vector<std::string> overrides;  // --set a.b=v
  std::string out;                     // run directory; empty: runs/<recipe name>
  bool resume = false;                 // continue the run directory's latest checkpoint
  int64_t stop_after = 0;  // stop (with a checkpoint) after this step; 0: run to the end
};

/// Trains on every rank of this process's job (MPI when started by mpirun with several
/// processes, else this process alone): resolves the recipe (the same on every rank), decides
/// resume or refusal, obtains the tokenizer (rank 0 builds it and sends it to the others),
/// builds the task, optimizer and schedule, runs the trainer, and on rank 0 prints the sample
/// and the final line `split=valid loss=… step=… run=…`. Returns the exit code (exit_codes.h).
int run_training(const TrainRequest& request);

}  // namespace rota::app
