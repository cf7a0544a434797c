// Helpers shared by the recipe tests: a valid base recipe and "load and return the error".
#pragma once

#include <string>
#include <vector>

#include "recipes/loader.h"

namespace rota::recipes::testing {

/// A small valid causal-LM recipe (line numbers matter to the location tests: `model {` is on
/// line 3, `width: 64` on line 5, `heads: 4` on line 7).
inline constexpr const char* kBaseRecipe = R"(version: 1
# a comment line
model {
  kind: CAUSAL_LM
  width: 64
  layers: 2
  heads: 4
  attention { linear {} }
  position { lrpe { type: 2 p: HOUSEHOLDER } }
}
data {
  corpus: "tinyshakespeare"
  tokenizer { kind: CHAR }
  sequence_length: 64
  batch_size: 8
}
train { steps: 100 }
)";

/// The RecipeError message of loading `text` with `overrides` as "test.txtpb", or "" when it
/// loads.
inline std::string load_error(const std::string& text,
                              const std::vector<std::string>& overrides = {}) {
  try {
    load_recipe_text(text, "test.txtpb", overrides);
  } catch (const RecipeError& error) {
    return error.what();
  }
  return "";
}

}  // namespace rota::recipes::testing
