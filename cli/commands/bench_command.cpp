// `rota bench train RECIPE [--set a.b=v]... [--steps N] [--warmup N] [--dtype f32|bf16]`.
#include <memory>

#include "app/run/bench_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

std::vector<Command> add_bench_commands(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  auto request = std::make_shared<app::BenchTrainRequest>();
  CLI::App* train = bench->add_subcommand(
      "train",
      "Time full training steps of a recipe; last line: tokens_per_s=… step_ms=… gflops=… mfu=…");
  train->add_option("recipe", request->recipe, "Recipe file")->required();
  add_override_options(*train, request->overrides, "the recipe");
  train->add_option("--steps", request->steps, "Timed steps (default 10)")
      ->check(positive_number());
  train->add_option("--warmup", request->warmup, "Untimed steps first (default 2)")
      ->check(non_negative_number());
  train->add_option(
      "--dtype", request->dtype,
      "Compute precision: f32, or bf16 (bf16 matrix products, f32 weights and optimizer state); "
      "default: the recipe's train.dtype");
  return {{train, [request] { return app::run_bench_train(*request); }}};
}

}  // namespace rota::cli
