// The compute precision of a run: recipe train.dtype or a --dtype flag → MatmulPrecision.
#pragma once

#include <string>

#include "framework/autograd/precision.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// train.dtype: F32 → kF32, BF16 → kBF16.
MatmulPrecision precision_from_recipe(const recipes::Recipe& recipe);

/// "f32" → kF32, "bf16" → kBF16; anything else is a RecipeError (exit code 2) naming `flag`
/// and the accepted values.
MatmulPrecision parse_precision(const std::string& flag, const std::string& value);

/// Routes the framework's precision warnings (the one-time note that bf16 products run on the
/// portable path) to the log, and logs which precision the run computes in.
void report_precision(MatmulPrecision precision);

}  // namespace rota::app
