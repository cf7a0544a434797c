// The `rota` subcommands: each adds its options to the command line and calls the application.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace rota::cli {

/// A parsed subcommand: `parsed` is set when the command line chose it; run() returns the exit
/// code (app/run/exit_codes.h).
struct Command {
  CLI::App* parsed = nullptr;
  std::function<int()> run;
};

/// `program`: how rota was invoked (argv[0]), echoed in the line that says how to resume.
Command add_train_command(CLI::App& app, const std::string& program);
Command add_eval_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_ablate_command(CLI::App& app);
/// `bench train`.
std::vector<Command> add_bench_commands(CLI::App& app);
/// `data list`, `data fetch`, `data prepare` and `data verify`.
std::vector<Command> add_data_commands(CLI::App& app);
/// `recipe show` and `recipe diff`.
std::vector<Command> add_recipe_commands(CLI::App& app);
/// `export hf`.
std::vector<Command> add_export_commands(CLI::App& app);
/// `import hf`.
std::vector<Command> add_import_commands(CLI::App& app);

/// Ends every command's --help (the program's, each group's and each subcommand's) with one
/// example and the doc to read; call once every command is added.
void add_help_footers(CLI::App& app);

}  // namespace rota::cli
