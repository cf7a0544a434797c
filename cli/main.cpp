// `rota`: the command-line entry point (train, eval, generate, bench, data); parse and dispatch.
#include <cstdio>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "recipes/recipe_error.h"

namespace {

using namespace rota::cli;

int dispatch(int argc, char** argv) {
  CLI::App app{
      "Rota: train linear-attention language models with LRPE on CPUs.\n"
      "Exit codes: 0 success, 1 runtime failure, 2 usage or recipe error.",
      "rota"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rota 0.1");

  TrainArgs train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train the model a recipe describes");
  train_cmd->add_option("recipe", train.recipe, "Recipe file (.txtpb)")->required();
  train_cmd->add_option("--set", train.overrides,
                        "Override a recipe field: --set model.layers=6 (repeatable)");
  train_cmd->add_option("--out", train.out, "Run directory (default: runs/<recipe name>)");
  train_cmd->add_flag("--resume", train.resume,
                      "Continue from the run directory's latest checkpoint (bit-exact)");
  train_cmd
      ->add_option("--stop-after", train.stop_after,
                   "Stop after this step with a checkpoint (continue later with --resume)")
      ->check(CLI::NonNegativeNumber);

  EvalArgs eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Evaluate a checkpoint on a whole split");
  eval_cmd->add_option("checkpoint", eval.checkpoint, "Run directory or checkpoint directory")
      ->required();
  eval_cmd->add_option("--split", eval.split, "valid or test (default test)");
  eval_cmd->add_option("--batches", eval.batches, "Evaluate only this many batches (0: all)")
      ->check(CLI::NonNegativeNumber);
  eval_cmd
      ->add_option("--context", eval.context,
                   "Evaluate windows of N tokens instead of the trained data.sequence_length "
                   "(length extrapolation)")
      ->check(CLI::PositiveNumber);

  GenerateArgs gen;
  CLI::App* gen_cmd = app.add_subcommand("generate", "Sample text from a causal LM checkpoint");
  gen_cmd->add_option("checkpoint", gen.checkpoint, "Run directory or checkpoint directory")
      ->required();
  gen_cmd->add_option("--prompt", gen.prompt, "Text to continue")->required();
  gen_cmd->add_option("--tokens", gen.tokens, "Tokens to generate (default 200)");
  gen_cmd->add_option("--temperature", gen.temperature,
                      "Softmax temperature; 0 = greedy (default 0.8)");
  gen_cmd->add_option("--top-k", gen.top_k, "Sample from the k most likely tokens; 0 = all");
  gen_cmd->add_option("--seed", gen.seed, "Sampling seed (default 0)");

  AblateArgs ablate;
  CLI::App* ablate_cmd = app.add_subcommand(
      "ablate",
      "Run every variant x seed of an ablation file, then results.csv, results.md and plots "
      "(rerun to resume)");
  ablate_cmd->add_option("ablation", ablate.ablation, "Ablation file (.txtpb)")->required();
  ablate_cmd->add_option("--out", ablate.out,
                         "Output directory (default: runs/ablations/<ablation name>)");
  ablate_cmd->add_option("--jobs", ablate.jobs, "Runs at once (default 1)")
      ->check(CLI::PositiveNumber);
  ablate_cmd
      ->add_option("--eval-batches", ablate.eval_batches,
                   "Evaluate only this many batches per split (0: whole splits; a quick look)")
      ->check(CLI::NonNegativeNumber);

  CLI::App* bench_cmd = app.add_subcommand("bench", "Benchmarks");
  bench_cmd->require_subcommand(1);
  BenchTrainArgs bench;
  CLI::App* bench_train = bench_cmd->add_subcommand(
      "train",
      "Time full training steps of a recipe; last line: tokens_per_s=… step_ms=… gflops=… mfu=…");
  bench_train->add_option("recipe", bench.recipe, "Recipe file")->required();
  bench_train->add_option("--set", bench.overrides, "Override a recipe field (repeatable)");
  bench_train->add_option("--steps", bench.steps, "Timed steps (default 10)");
  bench_train->add_option("--warmup", bench.warmup, "Untimed steps first (default 2)");
  bench_train->add_option(
      "--dtype", bench.dtype,
      "Compute precision: f32, or bf16 (bf16 matrix products, f32 weights and optimizer state); "
      "default: the recipe's train.dtype");

  CLI::App* data_cmd =
      app.add_subcommand("data", "Corpora: list what is registered and found, fetch");
  data_cmd->require_subcommand(1);
  CLI::App* data_list =
      data_cmd->add_subcommand("list", "Registered corpora and where their files are");
  std::string fetch_name;
  CLI::App* data_fetch =
      data_cmd->add_subcommand("fetch", "Download and verify a registered corpus");
  data_fetch->add_option("name", fetch_name, "Corpus name (see rota data list)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (*train_cmd) return run_train(train);
  if (*eval_cmd) return run_eval(eval);
  if (*gen_cmd) return run_generate(gen);
  if (*ablate_cmd) return run_ablate(ablate);
  if (*bench_train) return run_bench_train(bench);
  if (*data_list) return run_data_list();
  if (*data_fetch) return run_data_fetch(fetch_name);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const rota::recipes::RecipeError& e) {
    std::fflush(stdout);
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "error: " << e.what() << "\n";
    return kExitFailure;
  }
}
