// `rota eval RUN_OR_CHECKPOINT [--split S] [--data SOURCE] [--batches N] [--context N]
// [--stride N] [--by-position]`.
#include <memory>

#include "app/run/eval_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

Command add_eval_command(CLI::App& app) {
  auto request = std::make_shared<app::EvalRequest>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint on a whole split");
  cmd->add_option("checkpoint", request->checkpoint, "Run directory or checkpoint directory")
      ->required();
  cmd->add_option("--split", request->split, "valid or test (default test)");
  cmd->add_option("--data", request->data,
                  "Evaluate on another dataset: a registered corpus (its --split), or a file, "
                  "directory or glob (all of it) read like data.files");
  cmd->add_option("--batches", request->batches, "Evaluate only this many batches (0: all)")
      ->check(non_negative_number());
  cmd->add_option("--context", request->context,
                  "Evaluate windows of N tokens instead of the trained data.sequence_length "
                  "(length extrapolation)")
      ->check(positive_number());
  cmd->add_option("--stride", request->stride,
                  "Sliding windows: start one every N tokens and score only the tokens the "
                  "previous window did not, so each has at least window − N tokens of context "
                  "(causal LMs; default: non-overlapping windows)")
      ->check(positive_number());
  cmd->add_flag("--by-position", request->by_position,
                "Also print the loss by position in the window, in power-of-two buckets "
                "(causal LMs)");
  add_max_memory_option(*cmd, request->max_memory, "the evaluation");
  add_override_options(*cmd, request->overrides, "the checkpoint's recipe");
  return {cmd, [request] { return app::run_evaluation(*request); }};
}

}  // namespace rota::cli
