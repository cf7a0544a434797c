// Recipe `optimizer` section → optimizer (see optimizer_setup.h).
#include "app/setup/optimizer_setup.h"

#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"

namespace rota::app {

optim::WeightDecayPolicy weight_decay_policy_from_recipe(const recipes::Recipe& recipe) {
  const recipes::Optimizer& o = recipe.optimizer();
  optim::WeightDecayPolicy policy;
  policy.weight_decay = o.has_sgd()    ? o.sgd().weight_decay()
                        : o.has_adam() ? o.adam().weight_decay()
                                       : o.adamw().weight_decay();  // the default optimizer
  policy.decay_biases = o.decay_biases();
  policy.decay_norms = o.decay_norms();
  policy.decay_embeddings = o.decay_embeddings();
  policy.decay_positional = o.decay_positional();
  return policy;
}

std::unique_ptr<optim::Optimizer> optimizer_from_recipe(const recipes::Recipe& recipe,
                                                        nn::Module& model) {
  const recipes::Optimizer& o = recipe.optimizer();
  std::vector<optim::ParamGroup> groups = optim::role_param_groups(
      model, recipe.schedule().lr(), weight_decay_policy_from_recipe(recipe));
  if (o.has_sgd()) {
    optim::SgdOptions s;
    s.momentum = o.sgd().momentum();
    s.nesterov = o.sgd().nesterov();
    return std::make_unique<optim::SGD>(std::move(groups), s);
  }
  optim::AdamOptions a;
  if (o.has_adam()) {
    a.beta1 = o.adam().beta1();
    a.beta2 = o.adam().beta2();
    a.eps = o.adam().eps();
    return std::make_unique<optim::Adam>(std::move(groups), a);
  }
  a.beta1 = o.adamw().beta1();
  a.beta2 = o.adamw().beta2();
  a.eps = o.adamw().eps();
  return std::make_unique<optim::AdamW>(std::move(groups), a);
}

}  // namespace rota::app
