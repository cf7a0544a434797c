// `rota eval RUN_OR_CHECKPOINT [--split valid|test]`: metrics of a checkpoint on a whole split.
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands/commands.h"
#include "cli/jobs/checkpoint_task.h"
#include "framework/autograd/grad_mode.h"
#include "framework/io/log.h"

namespace rota::cli {

int run_eval(const EvalArgs& args) {
  io::init_logging_from_env();
  CheckpointTask loaded = load_checkpoint_task(args.checkpoint);
  io::log_info("eval: {} (step {}), split {}", loaded.checkpoint_dir.string(), loaded.state.step(),
               args.split);
  train::Metrics metrics;
  {
    NoGradGuard no_grad;
    metrics = loaded.task->evaluate_split(args.split, args.batches);
  }
  std::string line = "split=" + args.split;
  for (const auto& [name, value] : metrics) line += fmt::format(" {}={:.6g}", name, value);
  std::printf("%s\n", line.c_str());
  return kExitOk;
}

}  // namespace rota::cli
