// `rota eval`: the metrics of a trained checkpoint on a split, optionally at another context.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota::app {

struct EvalRequest {
  std::string checkpoint;    // run directory or checkpoint directory
  std::string split;         // empty: "test"
  std::string data;          // another dataset (eval_data_setup.h); empty: the run's own
  int64_t batches = 0;       // 0: the whole split
  int64_t context = 0;       // tokens per window; 0: the recipe's data.sequence_length
  bool by_position = false;  // also the loss per position bucket (causal LMs)
  int64_t stride = 0;      // sliding windows every `stride` tokens (causal LMs); 0: non-overlapping
  int64_t max_memory = 0;  // bytes evaluation may use (--max-memory); 0: what is available
  /// --set / --unset on the checkpoint's recipe (e.g. data.batch_size, train.threads), applied
  /// and re-validated before anything is built; model fields must still fit the weights.
  std::vector<std::string> overrides;
};

/// Evaluates in the precision the model was trained in and prints
/// `split=… loss=… ppl=… [accuracy=… mcc=…] parameters=…`, after one line per position bucket
/// `positions=A-B tokens=… loss=… ppl=…` with by_position. Returns the exit code.
int run_evaluation(const EvalRequest& request);

}  // namespace rota::app
