// Fine-tuning set-up: initial weights from a pretrained checkpoint, frozen parameters.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/nn/module.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// With a `finetune` section: loads finetune.init_from into the model (STRICT: every name on
/// both sides must match; PARTIAL: the names both have, logging what is skipped; shapes must
/// agree either way) and freezes the parameters finetune.freeze names. Call before building
/// the optimizer. Does nothing without a finetune section.
void apply_finetune(const recipes::Recipe& recipe, nn::Module& model);

/// The model block the run or checkpoint `init_from` was trained with (its recipe.txtpb), for a
/// fine-tuning recipe to inherit (recipes::load_recipe's `pretrained`); nullopt when there is no
/// readable checkpoint there yet (the weights' loading then says what is wrong).
std::optional<recipes::Model> pretrained_model(const std::string& init_from);

/// Marks the parameters matching `patterns` (name prefixes, or "embeddings" / "encoder") as
/// frozen; returns how many were frozen. A pattern that matches nothing is an error.
int64_t freeze_parameters(nn::Module& model, const std::vector<std::string>& patterns);

}  // namespace rota::app
