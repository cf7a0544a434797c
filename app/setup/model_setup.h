// Translating a resolved recipe's `model` section into models::ModelOptions and building the model.
#pragma once

#include <memory>

#include "models/language_models.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// models::ModelOptions from a resolved, validated recipe. vocab_size comes from the tokenizer.
/// Throws rota::Error for a configuration the model code cannot build (naming the field).
models::ModelOptions model_options_from_recipe(const recipes::Recipe& recipe, int64_t vocab_size);

}  // namespace rota::app
