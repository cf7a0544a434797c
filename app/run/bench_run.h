// `rota bench train`: a recipe's training steps timed, with FLOP/s, memory and MFU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota::app {

struct BenchTrainRequest {
  std::string recipe;
  std::vector<std::string> overrides;
  int64_t steps = 10;  // timed steps
  int64_t warmup = 2;  // untimed steps first
  std::string dtype;   // "f32" or "bf16"; empty: the recipe's train.dtype
};

/// Runs warmup + steps optimizer steps, then measures the machine's matmul ceiling, and prints
/// the recipe, memory, ceiling and the last line
/// `tokens_per_s=… step_ms=… gflops=… mfu=…` (median step). Returns the exit code.
int run_bench_train(const BenchTrainRequest& request);

}  // namespace rota::app
