// Fine-tuning set-up: initial weights from a pretrained checkpoint, frozen parameters.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/io/train_state.h"
#include "framework/nn/module.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// What apply_finetune did that the trainer must know.
struct FinetuneResult {
  /// With finetune.lora: the tensors the run's checkpoints leave out (frozen and loaded
  /// unchanged from finetune.init_from) and where they are (train::TrainerOptions::base_weights).
  std::optional<io::BaseWeights> base_weights;
};

/// With a `finetune` section: loads finetune.init_from into the model (STRICT: every name on
/// both sides must match; PARTIAL: the names both have, logging what is skipped; shapes must
/// agree either way; the model's own adapters are never expected there), then with
/// finetune.lora freezes all but the adapters (freeze_all_but_adapters), and freezes the
/// parameters finetune.freeze names. A checkpoint that itself holds adapters (a run trained
/// with finetune.lora) has them folded into its weights first, with its recipe's alpha / rank.
/// Call before building the optimizer. Does nothing without a finetune section.
FinetuneResult apply_finetune(const recipes::Recipe& recipe, nn::Module& model);

/// Resuming a fine-tuning run: freezes what the run froze when it started (the parameters its
/// checkpoint's base_weights lists, when it has one; then finetune.freeze).
void refreeze_on_resume(const recipes::Recipe& recipe, nn::Module& model,
                        const io::TrainState& checkpoint_state);

/// The model block the run or checkpoint `init_from` was trained with (its recipe.txtpb), for a
/// fine-tuning recipe to inherit (recipes::load_recipe's `pretrained`); nullopt when there is no
/// readable checkpoint there yet (the weights' loading then says what is wrong).
std::optional<recipes::Model> pretrained_model(const std::string& init_from);

/// Marks the parameters matching `patterns` (name prefixes, or "embeddings" / "encoder") as
/// frozen; returns how many were frozen. A pattern that matches nothing is an error.
int64_t freeze_parameters(nn::Module& model, const std::vector<std::string>& patterns);

}  // namespace rota::app
