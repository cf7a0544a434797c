// `rota train RECIPE [--set a.b=v]... [--out DIR] [--resume] [--stop-after N]`.
#include <map>
#include <memory>
#include <string>

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
  cmd->add_option_function<std::string>(
         "--progress",
         [request](const std::string& mode) {
           const std::map<std::string, app::ProgressMode> modes = {
               {"auto", app::ProgressMode::kAuto},
               {"plain", app::ProgressMode::kPlain},
               {"none", app::ProgressMode::kNone}};
           const auto found = modes.find(mode);
           if (found == modes.end()) {
             throw CLI::ValidationError("--progress: '" + mode +
                                        "' is not one of auto, plain, none");
           }
           request->progress = found->second;
         },
         "auto (a redrawn line on a terminal; plain lines under mpirun or into a file), plain "
         "(a line every train.log_every steps) or none")
      ->type_name("auto|plain|none");
  cmd->add_flag("--dry-run", request->dry_run,
                "Check the recipe, build the model and run the first micro-batch's forward pass; "
                "print the parameters, FLOPs per token, memory estimate and batch shape; write "
                "nothing");
  return {cmd, [request] { return app::run_training(*request); }};
}

}  // namespace rota::cli
