// Evaluating a trained model at another sequence length (`rota eval --context N`).
#pragma once

#include <cstdint>
#include <string>

#include "recipes/recipe.pb.h"

namespace rota::app {

/// The recipe a checkpoint trained with, changed to evaluate windows of `context` tokens:
/// data.sequence_length = context, and the evaluation batch rescaled to about the same tokens
/// per batch (data.batch_size = max(1, micro-batch × T / context), gradient_accumulation = 1;
/// memory stays bounded and the metrics do not depend on the batch). The model's weights do
/// not depend on the sequence length (app/setup/model_setup never reads it), so the trained
/// weights load as they are. Throws RecipeError when the model cannot run at that length — learned
/// absolute positions past their table (model.position.learned_absolute.max_positions), a
/// skew table past max_len, bidirectional PermuteFormer past its overflow limit — naming the
/// field and the limit.
recipes::Recipe recipe_at_context(const recipes::Recipe& trained, int64_t context);

/// Why the model of `trained` cannot be evaluated at `context` tokens; empty when it can.
std::string context_problem(const recipes::Recipe& trained, int64_t context);

}  // namespace rota::app
