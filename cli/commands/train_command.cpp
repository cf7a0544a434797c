// `rota train RECIPE [--set a.b=v]... [--out DIR] [--resume] [--stop-after N]`.
#include <memory>

#include "app/run/train_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

Command add_train_command(CLI::App& app, const std::string& program) {
  auto request = std::make_shared<app::TrainRequest>();
  request->program = program;
  CLI::App* cmd = app.add_subcommand("train", "Train the model a recipe describes");
  cmd->add_option("recipe", request->recipe, "Recipe file (.txtpb)")->required();
  add_override_options(*cmd, request->overrides, "the recipe");
  cmd->add_option("--out", request->out, "Run directory (default: runs/<recipe name>)");
  cmd->add_flag("--resume", request->resume,
                "Continue from the run directory's latest checkpoint (bit-exact)");
  cmd->add_option("--stop-after", request->stop_after,
                  "Stop after this step (>= 1) with a checkpoint (continue later with --resume)")
      ->check(positive_number());
  add_max_memory_option(*cmd, request->max_memory, "the run");
  cmd->add_flag("--dry-run", request->dry_run,
                "Check the recipe, build the model and run the first micro-batch's forward pass; "
                "print the parameters, FLOPs per token, memory estimate and batch shape; write "
                "nothing");
  return {cmd, [request] { return app::run_training(*request); }};
}

}  // namespace rota::cli
