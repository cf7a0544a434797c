// `rota data prepare` and `rota data verify`: tokenise a corpus once; check a prepared directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota::app {

struct PrepareRequest {
  std::string recipe;                  // optional: its data section (source, tokenizer)
  std::vector<std::string> overrides;  // --set a.b=v (with a recipe)
  std::string corpus;                  // --corpus NAME_OR_PATH: replaces the recipe's source
  std::string tokenizer;               // --tokenizer DIR: a saved tokenizer (replaces the recipe's)
  std::string out;                     // --out DIR (required)
  int64_t shard_mb = 256;              // --shard-mb
  int threads = 0;                     // --threads; 0: all cores
  bool force = false;                  // --force: replace a non-empty --out
};

/// Opens the corpus (the recipe's data source, or --corpus), obtains the tokenizer as training
/// would (--tokenizer, else the recipe's: data.tokenizer.path, or built from the train split),
/// and writes the prepared directory (data::prepare_corpus) with progress on stderr; prints a
/// summary per split on stdout. Without a recipe, --corpus and --tokenizer are required.
/// Returns the exit code.
int run_data_prepare(const PrepareRequest& request);

/// Opens a prepared directory and checks every shard's sha256; prints what was checked.
int run_data_verify(const std::string& dir);

}  // namespace rota::app
