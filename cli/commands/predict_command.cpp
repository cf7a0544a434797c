// `rota predict RUN_OR_CHECKPOINT --input FILE [--output FILE] [--format F] [--text-field F]`.
#include <memory>

#include "app/run/predict_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

Command add_predict_command(CLI::App& app) {
  auto request = std::make_shared<app::PredictRequest>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Predict labels (classifiers) or score lines (language models) as JSON Lines");
  cmd->add_option("checkpoint", request->checkpoint, "Run directory or checkpoint directory")
      ->required();
  cmd->add_option("--input", request->input, "Examples: text (one per line), .jsonl, .csv, .tsv")
      ->required();
  cmd->add_option("--output", request->output, "JSON Lines file to write (default: stdout)");
  cmd->add_option("--format", request->format, "auto (by extension), text, jsonl, csv or tsv");
  cmd->add_option("--text-field", request->text_field,
                  "JSONL field / CSV or TSV column of the text (default: the run's, else text)");
  cmd->add_option("--text-pair-field", request->text_pair_field,
                  "Field / column of the second text of a sentence pair");
  cmd->add_flag("--tokens", request->token_details,
                "Language models: list every token with its log-probability");
  cmd->add_option("--batch-size", request->batch_size, "Rows per forward pass (default 32)")
      ->check(positive_number());
  return {cmd, [request] { return app::run_prediction(*request); }};
}

}  // namespace rota::cli
