// `rota eval` (see eval_run.h).
#include "app/run/eval_run.h"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "app/run/exit_codes.h"
#include "app/setup/eval_data_setup.h"
#include "app/setup/precision_setup.h"
#include "app/tasks/checkpoint_task.h"
#include "framework/autograd/grad_mode.h"
#include "framework/io/log.h"
#include "recipes/loader.h"

namespace rota::app {

int run_evaluation(const EvalRequest& request) {
  io::init_logging_from_env();
  std::string split = request.split;
  CheckpointTask loaded = load_checkpoint_task(
      request.checkpoint, request.context,
      [&](recipes::Recipe& recipe) {
        if (!request.overrides.empty()) {
          recipe =
              recipes::load_recipe_text(recipes::format_recipe(recipe),
                                        request.checkpoint + " (its recipe)", request.overrides);
        }
        if (request.data.empty()) return;
        EvalData on_data = recipe_on_data(recipe, request.data, request.split);
        recipe = std::move(on_data.recipe);
        split = on_data.split;
      },
      MemoryBudget{request.max_memory});
  loaded.task->set_evaluation_stride(request.stride);
  // "valid", "validation", "val" and "dev" all name the validation split, whichever of them the
  // corpus calls it (WikiText has valid.txt, GLUE dev.tsv); a split the data lacks is refused
  // naming the ones it has.
  if (request.data.empty()) {
    split = loaded.task->evaluation_split_for(split, request.checkpoint, "--split ");
  }
  // What is evaluated, as key=value pairs.
  io::log_info("eval: checkpoint={} step={} parameters={} sequence_length={} split={}",
               loaded.checkpoint_dir.string(), loaded.state.step(),
               loaded.task->model().num_parameters(),
               loaded.task->recipe().data().sequence_length(), split);
  // The precision the model was trained in (train.dtype), so evaluation sees the same numerics.
  const MatmulPrecisionGuard precision(precision_from_recipe(loaded.task->recipe()));
  report_precision(matmul_precision());
  train::Metrics metrics;
  {
    NoGradGuard no_grad;
    if (request.by_position) {
      // Position p predicts the window's token p + 1 from its first p tokens.
      for (const PositionBucket& bucket :
           loaded.task->evaluate_by_position(split, request.batches)) {
        std::string line =
            fmt::format("positions={}-{} tokens={}", bucket.first, bucket.last, bucket.tokens);
        if (bucket.tokens > 0) {
          const double loss = bucket.loss_sum / static_cast<double>(bucket.tokens);
          line += fmt::format(" loss={:.6g} ppl={:.6g}", loss, std::exp(loss));
        } else {
          line += " loss=nan ppl=nan";  // no window reaches these positions
        }
        std::printf("%s\n", line.c_str());
      }
    }
    metrics = loaded.task->evaluate_split(split, request.batches);
  }
  std::string line = "split=" + split;
  for (const auto& [name, value] : metrics) line += fmt::format(" {}={:.6g}", name, value);
  line += fmt::format(" parameters={}", loaded.task->model().num_parameters());
  std::printf("%s\n", line.c_str());
  return kExitOk;
}

}  // namespace rota::app
