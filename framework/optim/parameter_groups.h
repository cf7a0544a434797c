// Parameter groups by role: which kinds of parameter (weights, biases, norms, ...) get weight
// decay.
#pragma once

#include <vector>

#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"

namespace rota::optim {

/// The weight decay of each parameter role. Weights (matrices of projections and heads) always
/// decay; the other roles decay only when their switch is on.
struct WeightDecayPolicy {
  double weight_decay = 0.0;
  bool decay_biases = false;
  bool decay_norms = false;
  bool decay_embeddings = false;
  bool decay_positional = false;

  /// The decay a parameter of `role` gets: weight_decay or 0.
  double decay_of(nn::ParameterRole role) const;
};

/// One group per parameter role present among the model's trainable parameters, in the order
/// weights, biases, norms, embeddings, positional (named by nn::parameter_role_name), each with
/// learning rate `lr` and the policy's decay; parameters keep named_parameters() order and their
/// names (the optimizer's checkpoint names). Throws when nothing is trainable.
std::vector<ParamGroup> role_param_groups(nn::Module& model, double lr,
                                          const WeightDecayPolicy& policy);

}  // namespace rota::optim
