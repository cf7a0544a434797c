// `rota eval --data SOURCE`: a trained run's recipe pointed at another dataset.
#pragma once

#include <string>

#include "recipes/recipe.pb.h"

namespace rota::app {

/// The recipe and the split to evaluate for `--data source`:
///  - a registered corpus name: data.corpus = source; the split is `split` ("test" when empty);
///  - a path — a file, a directory of data files or a glob pattern: the whole of it is the
///    evaluation data, read like data.files (format by extension; the run's data.files fields
///    and labels when it had them, else its TSV columns, else "text" and "label"); the split
///    is "test" and a `split` other than empty or "test" is refused.
/// The rest of the recipe (model, tokenizer, sequence length) is the run's. The result is
/// validated; problems are a recipes::RecipeError naming --data.
struct EvalData {
  recipes::Recipe recipe;
  std::string split;
};
EvalData recipe_on_data(const recipes::Recipe& trained, const std::string& source,
                        const std::string& split);

}  // namespace rota::app
