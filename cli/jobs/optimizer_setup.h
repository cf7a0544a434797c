// The recipe's optimizer (with its weight-decay policy), schedule and training length.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"
#include "framework/optim/schedule.h"
#include "recipes/recipe.pb.h"

namespace rota::cli {

/// What a parameter is, for the weight-decay policy (optimizer.decay_*).
enum class ParameterKind {
  kWeight,      // matrices of projections and heads: always decayed
  kBias,        // rank-1 tensors outside norms (biases, the MLM output bias)
  kNorm,        // LayerNorm / RMSNorm gains and offsets
  kEmbedding,   // token and learned absolute position embeddings
  kPositional,  // LRPE θ and Householder v, relative tables and biases (Shaw, XL, T5, skew)
};
const char* parameter_kind_name(ParameterKind kind);

/// Every trainable parameter (frozen ones left out) with its kind, by the module that owns it.
std::vector<std::pair<std::string, ParameterKind>> classify_parameters(nn::Module& model);

/// The optimizer of recipe.optimizer over the model's trainable parameters: one group per
/// parameter kind, weight decay per the decay_* switches, checkpoint names = parameter names.
std::unique_ptr<optim::Optimizer> optimizer_from_recipe(const recipes::Recipe& recipe,
                                                        nn::Module& model);

/// Optimizer steps of the run: train.steps, or round(train.epochs × steps_per_epoch) (at
/// least 1).
int64_t total_steps_from_recipe(const recipes::Recipe& recipe, int64_t steps_per_epoch);

/// recipe.schedule for a run of total_steps; throws rota::Error when warm-up does not fit.
optim::ScheduleOptions schedule_options_from_recipe(const recipes::Recipe& recipe,
                                                    int64_t total_steps);

}  // namespace rota::cli
