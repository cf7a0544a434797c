// `rota data prepare` / `rota data verify` (see prepare_run.h).
#include "app/run/prepare_run.h"

#include <cstdio>
#include <memory>
#include <optional>

#include "app/run/byte_progress.h"
#include "app/run/exit_codes.h"
#include "app/run/temp_cleanup.h"
#include "app/setup/data_source_setup.h"
#include "app/setup/document_setup.h"
#include "app/setup/tokenizer_setup.h"
#include "data/corpus/corpus.h"
#include "data/corpus/corpus_registry.h"
#include "data/prepared/prepare.h"
#include "data/prepared/prepared_corpus.h"
#include "data/tokenizer/open_tokenizer.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

namespace rota::app {

int run_data_prepare(const PrepareRequest& request) {
  if (request.out.empty()) throw recipes::RecipeError("rota data prepare: --out DIR is required");
  if (request.shard_mb < 1) {
    throw recipes::RecipeError("rota data prepare: --shard-mb must be at least 1");
  }
  if (request.recipe.empty() && (request.corpus.empty() || request.tokenizer.empty())) {
    throw recipes::RecipeError(
        "rota data prepare: give a RECIPE (its data section), or both --corpus and --tokenizer");
  }
  if (request.recipe.empty() && !request.overrides.empty()) {
    throw recipes::RecipeError("rota data prepare: --set needs a RECIPE");
  }
  remove_stale_temporary_directories();
  const data::DataOptions data_options = data::default_data_options();
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::optional<data::Corpus> corpus;
  DocumentSettings documents;  // none without a recipe
  if (!request.recipe.empty()) {
    recipes::Recipe recipe = recipes::load_recipe(request.recipe, request.overrides);
    recipes::Data& d = *recipe.mutable_data();
    if (d.has_prepared()) {
      throw recipes::RecipeError("rota data prepare: the recipe's data is already prepared (" +
                                 d.prepared() + ")");
    }
    if (recipe.model().kind() == recipes::Model::CLASSIFIER) {
      throw recipes::RecipeError(
          "rota data prepare: prepared corpora are for language models (CAUSAL_LM, MASKED_LM), "
          "not a CLASSIFIER's TSV");
    }
    if (!request.corpus.empty()) {
      // The tokenizer, when built, learns from this corpus's train split.
      if (data::find_corpus(request.corpus)) {
        d.set_corpus(request.corpus);
      } else {
        d.set_text_dir(request.corpus);
      }
    }
    if (!request.tokenizer.empty()) {
      // The file says what kind it is; the recipe's resolved (default) kind does not apply.
      d.mutable_tokenizer()->Clear();
      d.mutable_tokenizer()->set_path(request.tokenizer);
    }
    tokenizer = obtain_tokenizer(recipe, std::nullopt, data_options);
    corpus.emplace(open_recipe_corpus(recipe, data_options));
    documents = document_settings(recipe, *tokenizer);
  } else {
    tokenizer = data::open_tokenizer(request.tokenizer);
    corpus.emplace(data::Corpus::open(request.corpus, data_options));
  }

  data::PrepareOptions options;
  options.out = request.out;
  options.documents = documents.boundary;
  options.document_end_token = documents.separator;
  options.shard_bytes = request.shard_mb << 20;
  options.threads = request.threads;
  options.force = request.force;
  ByteProgress progress("prepare");
  options.progress = [&](const data::PrepareProgress& p) {
    progress.update(p.done_bytes, p.total_bytes, p.split);
  };
  const data::PreparedManifest manifest = data::prepare_corpus(*corpus, *tokenizer, options);
  int64_t text_bytes = 0;
  for (const data::SplitInfo& split : manifest.splits) text_bytes += split.text_bytes;
  progress.finish(text_bytes);
  std::printf("prepared %s with a %s tokenizer (%lld ids, %s) into %s\n", manifest.source.c_str(),
              manifest.tokenizer_kind.c_str(), static_cast<long long>(manifest.vocab_size),
              data::token_width_name(manifest.dtype), request.out.c_str());
  if (manifest.documents != data::DocumentBoundary::kNone) {
    std::printf("  documents: %s, each ended by token %lld (%s)\n",
                data::document_boundary_name(manifest.documents),
                static_cast<long long>(manifest.document_end_token),
                tokenizer->token_text(manifest.document_end_token).c_str());
  }
  for (const data::SplitInfo& split : manifest.splits) {
    std::printf("  %-6s %lld bytes of text -> %lld tokens in %zu shard(s)\n", split.name.c_str(),
                static_cast<long long>(split.text_bytes), static_cast<long long>(split.tokens),
                split.shards.size());
  }
  return kExitOk;
}

int run_data_verify(const std::string& dir) {
  const data::VerifyResult result = data::verify_prepared(dir);
  std::printf("%s: ok (%lld shards, %lld bytes, sha256 as in the manifest)\n", dir.c_str(),
              static_cast<long long>(result.shards), static_cast<long long>(result.bytes));
  return kExitOk;
}

}  // namespace rota::app
