// `rota bench train` (see bench_run.h).
#include "app/run/bench_run.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

#include "app/run/exit_codes.h"
#include "app/run/matmul_ceiling.h"
#include "app/setup/finetune_setup.h"
#include "app/setup/optimizer_setup.h"
#include "app/setup/precision_setup.h"
#include "app/setup/schedule_setup.h"
#include "app/setup/tokenizer_setup.h"
#include "app/setup/trainer_setup.h"
#include "app/tasks/task.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/io/log.h"
#include "framework/tensor/storage.h"
#include "framework/train/train_step.h"
#include "models/model_flops.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

namespace rota::app {

int run_bench_train(const BenchTrainRequest& request) {
  io::init_logging_from_env();
  // An empty --dtype means the recipe's train.dtype; a given one overrides it (and is checked
  // before anything is loaded).
  const MatmulPrecision flag_precision =
      request.dtype.empty() ? MatmulPrecision::kF32 : parse_precision("--dtype", request.dtype);
  if (request.steps < 1) throw recipes::RecipeError("--steps must be >= 1");
  if (request.warmup < 0) throw recipes::RecipeError("--warmup must be >= 0");
  const recipes::Recipe recipe =
      recipes::load_recipe(request.recipe, request.overrides, pretrained_model);
  const MatmulPrecisionGuard precision(request.dtype.empty() ? precision_from_recipe(recipe)
                                                             : flag_precision);
  report_precision(matmul_precision());
  const int threads = apply_thread_setting(recipe);
  TaskInputs inputs;
  inputs.recipe = recipe;
  inputs.tokenizer = obtain_tokenizer(recipe, std::nullopt, inputs.data_options);
  std::unique_ptr<Task> task = make_task(std::move(inputs));
  const int64_t total = request.warmup + request.steps;
  const std::unique_ptr<optim::Optimizer> optimizer = optimizer_from_recipe(recipe, task->model());
  optim::ScheduleOptions schedule_options = schedule_options_from_recipe(
      recipe, std::max<int64_t>(total, recipe.schedule().warmup_steps() + 1));
  const std::unique_ptr<optim::LrSchedule> schedule = optim::make_schedule(schedule_options);
  train::StepOptions step_options;
  step_options.grad_accumulation = recipe.train().gradient_accumulation();
  step_options.clip_norm = recipe.train().grad_clip();
  train::StepRunner runner(task->model().parameters(), *optimizer, *schedule, step_options);
  task->model().train();

  std::vector<double> step_seconds;
  backend::MatmulTime matmul_time;  // the timed steps' oneDNN products
  StorageStats resident;            // tensors alive between timed steps: weights, optimizer state
  for (int64_t i = 0; i < total; ++i) {
    if (i == request.warmup) {
      resident = storage_stats();
      reset_storage_peak();
      backend::reset_matmul_time();
    }
    const auto start = std::chrono::steady_clock::now();
    const train::StepResult result = runner.run([&] { return task->next_micro_batch(); });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= request.warmup) step_seconds.push_back(seconds);
    io::log_info("bench step {}/{}{}: {:.1f} ms, loss {:.4f}", i + 1, total,
                 i < request.warmup ? " (warm-up)" : "", seconds * 1e3, result.loss);
  }
  matmul_time = backend::matmul_time();
  const double mean_step = std::accumulate(step_seconds.begin(), step_seconds.end(), 0.0) /
                           static_cast<double>(step_seconds.size());
  std::sort(step_seconds.begin(), step_seconds.end());
  const double median = step_seconds[step_seconds.size() / 2];
  const int64_t tokens_per_step = recipe.data().batch_size() * recipe.data().sequence_length();
  const double flops =
      models::training_flops_per_token(task->model_options(), recipe.data().sequence_length()) *
      static_cast<double>(tokens_per_step);
  // The ceiling right after the steps, on the same threads, oneDNN and precision.
  const MatmulCeiling ceiling = measure_matmul_ceiling(matmul_precision());
  io::log_info("matmul ceiling: {:.2f} GFLOP/s at {}^3 (best of {} products, {:.2f} s)",
               ceiling.gflops, ceiling.size, ceiling.products, ceiling.seconds);
  const double gflops = flops / median / 1e9;
  std::printf("recipe=%s threads=%d steps=%lld tokens_per_step=%lld dtype=%s\n",
              recipe.name().c_str(), threads, static_cast<long long>(request.steps),
              static_cast<long long>(tokens_per_step), matmul_precision_name(matmul_precision()));
  // Memory of the timed steps: the tensor high-water mark, and what the step adds on top of the
  // tensors that live across steps (activations, gradients, temporaries) per token.
  const StorageStats memory = storage_stats();
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak_tensor_mb=%.1f step_bytes_per_token=%.0f max_rss_mb=%.1f\n",
              static_cast<double>(memory.peak_bytes) / (1 << 20),
              static_cast<double>(memory.peak_bytes - resident.live_bytes) /
                  static_cast<double>(tokens_per_step),
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::printf("ceiling_gflops=%.2f ceiling_n=%lld\n", ceiling.gflops,
              static_cast<long long>(ceiling.size));
  // Where the time goes: oneDNN's products against everything else (the other kernels, the
  // optimizer, thread synchronisation), per step, means over the timed steps.
  const double steps = static_cast<double>(request.steps);
  const double matmul_ms = matmul_time.seconds / steps * 1e3;
  std::printf(
      "step_ms_mean=%.2f matmul_ms=%.2f outside_matmul_ms=%.2f matmul_share=%.3f "
      "products_per_step=%.1f\n",
      mean_step * 1e3, matmul_ms, mean_step * 1e3 - matmul_ms, matmul_ms / (mean_step * 1e3),
      static_cast<double>(matmul_time.products) / steps);
  // MFU: the model's analytic FLOP/s over the best square product the same setup achieves.
  std::printf("tokens_per_s=%.1f step_ms=%.2f gflops=%.2f mfu=%.4f\n",
              static_cast<double>(tokens_per_step) / median, median * 1e3, gflops,
              gflops / ceiling.gflops);
  return kExitOk;
}

}  // namespace rota::app
