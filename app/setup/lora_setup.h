// Low-rank adapters from a recipe's finetune.lora: adding them to a model, choosing what trains.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "framework/nn/linear.h"
#include "framework/nn/module.h"
#include "framework/tensor/random.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// The layers that get an adapter when finetune.lora.targets is empty.
const std::vector<std::string>& default_lora_targets();

/// nn::LoraOptions from a validated finetune.lora.
nn::LoraOptions lora_options_from_recipe(const recipes::Lora& lora);

/// With finetune.lora: adds the adapters to `model` (module names refused: the causal LM's
/// lm_head, whose product is fused with the loss) and returns the adapted module names; without
/// it, nothing. Called wherever a run's model is built (training, and loading a trained run to
/// evaluate, generate or export it), so the adapters' tensors always have a place to load into.
std::vector<std::string> add_recipe_adapters(const recipes::Recipe& recipe, nn::Module& model,
                                             Generator& init_gen,
                                             std::shared_ptr<Generator> dropout_gen);

/// With finetune.lora: freezes every parameter except the adapters, those finetune.lora.train
/// names and those not in `from_checkpoint` (the names the pretrained checkpoint provided);
/// returns how many it froze. A `train` entry that matches nothing is an error.
int64_t freeze_all_but_adapters(const recipes::Recipe& recipe, nn::Module& model,
                                const std::set<std::string>& from_checkpoint);

}  // namespace rota::app
