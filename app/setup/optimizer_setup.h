// Translating a recipe's `optimizer` section: the optimizer and its weight-decay policy.
#pragma once

#include <memory>

#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"
#include "framework/optim/parameter_groups.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// optimizer.decay_* and the chosen optimizer's weight_decay as a policy.
optim::WeightDecayPolicy weight_decay_policy_from_recipe(const recipes::Recipe& recipe);

/// The optimizer of recipe.optimizer over the model's trainable parameters: one group per
/// parameter role (optim::role_param_groups), checkpoint names = parameter names.
std::unique_ptr<optim::Optimizer> optimizer_from_recipe(const recipes::Recipe& recipe,
                                                        nn::Module& model);

}  // namespace rota::app
