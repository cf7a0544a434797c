// `rota data list` and `rota data fetch NAME`.
#include <memory>
#include <string>

#include "app/run/data_run.h"
#include "cli/commands/commands.h"

namespace rota::cli {

std::vector<Command> add_data_commands(CLI::App& app) {
  CLI::App* data = app.add_subcommand("data", "Corpora: list what is registered and found, fetch");
  data->require_subcommand(1);
  CLI::App* list = data->add_subcommand("list", "Registered corpora and where their files are");
  auto name = std::make_shared<std::string>();
  CLI::App* fetch = data->add_subcommand("fetch", "Download and verify a registered corpus");
  fetch->add_option("name", *name, "Corpus name (see rota data list)")->required();
  return {{list, [] { return app::run_data_list(); }},
          {fetch, [name] { return app::run_data_fetch(*name); }}};
}

}  // namespace rota::cli
