// A fine-tuning recipe's model block on top of the pretrained run's: what the recipe writes wins.
#pragma once

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// Puts `pretrained` (the model block finetune.init_from's run was trained with) under the
/// model block `recipe` writes: every field the recipe writes wins (sub-messages field by field;
/// a oneof member written switches the choice; a repeated field written replaces the list),
/// every other field comes from `pretrained`, except those that do not apply to the result (a
/// language model's tie_embeddings under kind: CLASSIFIER), which are left out. Call before
/// resolution, while "written" still means written.
void inherit_model(Recipe& recipe, const Model& pretrained);

}  // namespace rota::recipes
