// Opening a recipe's data source (data.corpus, text_dir, tsv_dir or files) as a Corpus.
#pragma once

#include <string>

#include "data/corpus/corpus.h"
#include "data/source/file_source.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// The FileSourceSpec of data.files (label and pair fields only for classifiers).
data::FileSourceSpec file_source_spec(const recipes::Recipe& recipe);

/// The corpus of a recipe's data source. A text_dir that is a JSON/CSV/TSV file is refused (it
/// would be read as running text); data.files paths are expanded and their formats resolved.
data::Corpus open_recipe_corpus(const recipes::Recipe& recipe, const data::DataOptions& options);

/// The recipe's source as one string, for messages: the corpus name or path, data.files.train,
/// or the prepared directory.
std::string recipe_source_name(const recipes::Data& data);

}  // namespace rota::app
