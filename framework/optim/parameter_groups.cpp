// Parameter groups by role (see parameter_groups.h).
#include "framework/optim/parameter_groups.h"

#include <map>
#include <string>

#include "framework/base/error.h"

namespace rota::optim {

double WeightDecayPolicy::decay_of(nn::ParameterRole role) const {
  switch (role) {
    case nn::ParameterRole::kWeight:
      return weight_decay;
    case nn::ParameterRole::kBias:
      return decay_biases ? weight_decay : 0.0;
    case nn::ParameterRole::kNorm:
      return decay_norms ? weight_decay : 0.0;
    case nn::ParameterRole::kEmbedding:
      return decay_embeddings ? weight_decay : 0.0;
    case nn::ParameterRole::kPositional:
      return decay_positional ? weight_decay : 0.0;
  }
  return 0.0;
}

std::vector<ParamGroup> role_param_groups(nn::Module& model, double lr,
                                          const WeightDecayPolicy& policy) {
  std::map<std::string, Variable> params;
  for (const auto& [name, param] : model.named_parameters()) params.emplace(name, param);
  const auto roles = nn::parameter_roles(model);
  std::vector<ParamGroup> groups;
  for (nn::ParameterRole role :
       {nn::ParameterRole::kWeight, nn::ParameterRole::kBias, nn::ParameterRole::kNorm,
        nn::ParameterRole::kEmbedding, nn::ParameterRole::kPositional}) {
    ParamGroup group;
    group.name = nn::parameter_role_name(role);
    group.lr = lr;
    group.weight_decay = policy.decay_of(role);
    for (const auto& [name, r] : roles) {
      if (r != role) continue;
      group.params.push_back(params.at(name));
      group.param_names.push_back(name);
    }
    if (!group.params.empty()) groups.push_back(std::move(group));
  }
  ROTA_CHECK(!groups.empty(), "optimizer: the model has no trainable parameters (all frozen?)");
  return groups;
}

}  // namespace rota::optim
