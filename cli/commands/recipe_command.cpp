// `rota recipe show RECIPE_OR_RUN [--set/--unset]...` and `rota recipe diff A B`.
#include <memory>

#include "app/run/recipe_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

std::vector<Command> add_recipe_commands(CLI::App& app) {
  CLI::App* group = app.add_subcommand("recipe", "Look at recipes: show one resolved, diff two");
  group->require_subcommand(1);
  struct Request {
    std::string recipe, other;
    std::vector<std::string> overrides;
  };
  auto show_request = std::make_shared<Request>();
  CLI::App* show = group->add_subcommand(
      "show", "Print the resolved recipe with every default written out (--set/--unset applied)");
  show->add_option("recipe", show_request->recipe, "Recipe file, run or checkpoint directory")
      ->required();
  add_override_options(*show, show_request->overrides, "the recipe");
  auto diff_request = std::make_shared<Request>();
  CLI::App* diff = group->add_subcommand(
      "diff", "Print the fields that differ between two recipes (files, runs or checkpoints)");
  diff->add_option("a", diff_request->recipe, "Recipe file, run or checkpoint directory")
      ->required();
  diff->add_option("b", diff_request->other, "Recipe file, run or checkpoint directory")
      ->required();
  return {
      {show,
       [show_request] {
         return app::run_recipe_show(show_request->recipe, show_request->overrides);
       }},
      {diff,
       [diff_request] { return app::run_recipe_diff(diff_request->recipe, diff_request->other); }},
  };
}

}  // namespace rota::cli
