// `rota data list`, `fetch NAME`, `prepare [RECIPE] --out DIR` and `verify DIR`.
#include <memory>
#include <string>

#include "app/run/data_run.h"
#include "app/run/prepare_run.h"
#include "cli/commands/command_checks.h"
#include "cli/commands/commands.h"

namespace rota::cli {

std::vector<Command> add_data_commands(CLI::App& app) {
  CLI::App* data = app.add_subcommand(
      "data", "Corpora: list what is registered and found, fetch, prepare (tokenise once), verify");
  data->require_subcommand(1);
  CLI::App* list = data->add_subcommand("list", "Registered corpora and where their files are");
  auto name = std::make_shared<std::string>();
  CLI::App* fetch = data->add_subcommand("fetch", "Download and verify a registered corpus");
  fetch->add_option("name", *name, "Corpus name (see rota data list)")->required();

  auto request = std::make_shared<app::PrepareRequest>();
  CLI::App* prepare = data->add_subcommand(
      "prepare", "Tokenise every split of a corpus once into shards that training maps from disk");
  prepare->add_option("recipe", request->recipe,
                      "Recipe whose data section names the corpus and tokenizer (optional)");
  prepare->add_option("--out", request->out, "The prepared directory to write")->required();
  add_override_options(*prepare, request->overrides, "the recipe");
  prepare->add_option("--corpus", request->corpus,
                      "Corpus name or path (replaces the recipe's data source)");
  prepare->add_option("--tokenizer", request->tokenizer,
                      "Tokenizer: a Rota directory, a Hugging Face tokenizer.json or a "
                      "SentencePiece .model (replaces the recipe's tokenizer)");
  prepare->add_option("--shard-mb", request->shard_mb, "Largest shard file in MB (default 256)")
      ->check(positive_number());
  prepare->add_option("--threads", request->threads, "Encoding threads (default: all cores)")
      ->check(non_negative_number());
  prepare->add_flag("--force", request->force, "Replace a non-empty --out");

  auto dir = std::make_shared<std::string>();
  CLI::App* verify = data->add_subcommand(
      "verify", "Check a prepared directory: manifest, shard sizes and every shard's sha256");
  verify->add_option("dir", *dir, "Prepared directory")->required();
  return {{list, [] { return app::run_data_list(); }},
          {fetch, [name] { return app::run_data_fetch(*name); }},
          {prepare, [request] { return app::run_data_prepare(*request); }},
          {verify, [dir] { return app::run_data_verify(*dir); }}};
}

}  // namespace rota::cli
