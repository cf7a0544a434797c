// `rota`: the command-line entry point (train, eval, generate, ablate, bench, data).
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/run/error_text.h"
#include "app/run/exit_codes.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"
#include "rota_version.h"

namespace {

using namespace rota::cli;
using rota::app::kExitUsage;

int dispatch(int argc, char** argv) {
  CLI::App app{
      "Rota: train linear-attention language models with LRPE on CPUs.\n"
      "Exit codes: 0 success, 1 runtime failure, 2 usage or recipe error.",
      "rota"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ROTA_VERSION_TEXT);
  std::vector<Command> commands = {add_train_command(app, argc > 0 ? argv[0] : "rota"),
                                   add_eval_command(app), add_predict_command(app),
                                   add_generate_command(app), add_ablate_command(app)};
  for (std::vector<Command> group : {add_bench_commands(app), add_data_commands(app),
                                     add_recipe_commands(app), add_export_commands(app),
                                     add_import_commands(app)}) {
    commands.insert(commands.end(), group.begin(), group.end());
  }
  add_help_footers(app);
  // CLI11 says only "A subcommand is required" for `rota trian`: name the word, and the closest.
  if (const auto unknown = unknown_command_message(app, {argv + 1, argv + argc})) {
    std::cerr << *unknown << "\n";
    return kExitUsage;
  }
  if (const auto unknown = unknown_option_message(app, {argv + 1, argv + argc})) {
    std::cerr << *unknown << "\n";
    return kExitUsage;
  }
  if (const auto split = split_braces_message({argv + 1, argv + argc})) {
    std::cerr << "error: " << *split << "\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? rota::app::kExitOk : kExitUsage;
  }
  for (const Command& command : commands) {
    if (*command.parsed) return command.run();
  }
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f), a write fails with EFBIG — reported naming the file, with
  // appends rolled back to a whole record — instead of SIGXFSZ killing rota mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "error: " << rota::app::error_text(e) << "\n";
    return rota::app::exit_code_of(e);
  }
}
