// A trained run's recipe on another dataset (see eval_data_setup.h).
#include "app/setup/eval_data_setup.h"

#include <filesystem>

#include <fmt/format.h>

#include "data/corpus/corpus_registry.h"
#include "data/source/path_patterns.h"
#include "recipes/recipe_error.h"
#include "recipes/validate.h"

namespace rota::app {

EvalData recipe_on_data(const recipes::Recipe& trained, const std::string& source,
                        const std::string& split) {
  if (source.empty()) throw recipes::RecipeError("--data: give a corpus name or a path");
  EvalData result{trained, split.empty() ? "test" : split};
  recipes::Data& data = *result.recipe.mutable_data();
  if (data::find_corpus(source) != nullptr) {
    data.clear_tsv();
    data.set_corpus(source);  // the oneof: replaces the run's source
  } else {
    std::error_code error;
    if (!data::has_wildcard(source) && !std::filesystem::exists(source, error)) {
      throw recipes::RecipeError(fmt::format(
          "--data: '{}' is neither a registered corpus ({}) nor an existing file, directory or "
          "glob pattern",
          source, data::registered_corpus_names()));
    }
    if (!split.empty() && split != "test") {
      throw recipes::RecipeError(fmt::format(
          "--split {}: with --data PATH the whole of PATH is evaluated (as split 'test'); drop "
          "--split, or give a corpus whose splits are named",
          split));
    }
    recipes::Files files;
    if (data.has_files()) {
      files = data.files();
    } else if (data.has_tsv()) {
      files.set_text_field(data.tsv().text());
      if (data.tsv().has_text_pair()) files.set_text_pair_field(data.tsv().text_pair());
      files.set_label_field(data.tsv().label());
    } else if (const data::CorpusInfo* corpus =
                   data.has_corpus() ? data::find_corpus(data.corpus()) : nullptr;
               corpus != nullptr && !corpus->text_columns.empty()) {
      // A registered TSV corpus: its column names.
      files.set_text_field(corpus->text_columns[0]);
      if (corpus->text_columns.size() > 1) files.set_text_pair_field(corpus->text_columns[1]);
      if (!corpus->label_column.empty()) files.set_label_field(corpus->label_column);
    }
    if (trained.model().kind() != recipes::Model::CLASSIFIER) {
      files.clear_text_pair_field();
      files.clear_label_field();
      files.clear_labels();
    }
    files.clear_format();
    files.clear_valid_fraction();
    // Every split is the evaluated data: nothing is held out, nothing else is read.
    files.set_train(source);
    files.set_valid(source);
    files.set_test(source);
    data.clear_tsv();
    *data.mutable_files() = files;
    result.split = "test";
  }
  const std::vector<recipes::Issue> issues = recipes::validate_recipe(result.recipe);
  if (!issues.empty()) {
    std::string message = fmt::format("--data {}: the run's recipe cannot read it:", source);
    for (const recipes::Issue& issue : issues)
      message += "\n  " + issue.path + ": " + issue.message;
    throw recipes::RecipeError(message);
  }
  return result;
}

}  // namespace rota::app
