// Recipe optimizer, weight-decay groups, schedule and length (see optimizer_setup.h).
#include "cli/jobs/optimizer_setup.h"

#include <cmath>
#include <map>

#include "framework/nn/attention/attention_call.h"
#include "framework/nn/embedding.h"
#include "framework/nn/norm.h"
#include "framework/nn/position/absolute.h"
#include "framework/nn/position/lrpe.h"
#include "framework/nn/position/permute_former.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"

namespace rota::cli {
namespace {

// The kind a module gives every parameter under it, if it decides one.
std::optional<ParameterKind> module_kind(nn::Module* module) {
  if (dynamic_cast<nn::LayerNorm*>(module) || dynamic_cast<nn::RMSNorm*>(module)) {
    return ParameterKind::kNorm;
  }
  if (dynamic_cast<nn::Embedding*>(module) || dynamic_cast<nn::LearnedPositionEmbedding*>(module)) {
    return ParameterKind::kEmbedding;
  }
  if (dynamic_cast<nn::Lrpe*>(module) || dynamic_cast<nn::PermuteFormer*>(module) ||
      dynamic_cast<nn::RelativeAttentionEncoding*>(module)) {
    return ParameterKind::kPositional;
  }
  return std::nullopt;
}

bool decays(const recipes::Optimizer& o, ParameterKind kind) {
  switch (kind) {
    case ParameterKind::kWeight:
      return true;
    case ParameterKind::kBias:
      return o.decay_biases();
    case ParameterKind::kNorm:
      return o.decay_norms();
    case ParameterKind::kEmbedding:
      return o.decay_embeddings();
    case ParameterKind::kPositional:
      return o.decay_positional();
  }
  return false;
}

}  // namespace

const char* parameter_kind_name(ParameterKind kind) {
  switch (kind) {
    case ParameterKind::kWeight:
      return "weights";
    case ParameterKind::kBias:
      return "biases";
    case ParameterKind::kNorm:
      return "norms";
    case ParameterKind::kEmbedding:
      return "embeddings";
    case ParameterKind::kPositional:
      return "positional";
  }
  return "?";
}

std::vector<std::pair<std::string, ParameterKind>> classify_parameters(nn::Module& model) {
  // Module prefixes ("encoder.blocks.0.ln1.") that decide their parameters' kind; the
  // deepest one wins (an embedding inside a positional module is positional only if nothing
  // deeper says otherwise).
  std::vector<std::pair<std::string, ParameterKind>> prefixes;
  for (auto& [name, module] : model.named_modules()) {
    if (auto kind = module_kind(module))
      prefixes.emplace_back(name.empty() ? "" : name + ".", *kind);
  }
  std::vector<std::pair<std::string, ParameterKind>> result;
  for (const auto& [name, param] : model.named_parameters()) {
    if (!param.requires_grad()) continue;
    std::optional<ParameterKind> kind;
    size_t best_length = 0;
    for (const auto& [prefix, k] : prefixes) {
      if (name.compare(0, prefix.size(), prefix) == 0 && (!kind || prefix.size() > best_length)) {
        kind = k;
        best_length = prefix.size();
      }
    }
    if (!kind) kind = param.data().dim() >= 2 ? ParameterKind::kWeight : ParameterKind::kBias;
    result.emplace_back(name, *kind);
  }
  return result;
}

std::unique_ptr<optim::Optimizer> optimizer_from_recipe(const recipes::Recipe& recipe,
                                                        nn::Module& model) {
  const recipes::Optimizer& o = recipe.optimizer();
  double weight_decay = 0;
  if (o.has_sgd()) {
    weight_decay = o.sgd().weight_decay();
  } else if (o.has_adam()) {
    weight_decay = o.adam().weight_decay();
  } else {
    weight_decay = o.adamw().weight_decay();  // the default optimizer
  }
  std::map<std::string, Variable> params;
  for (const auto& [name, param] : model.named_parameters()) params.emplace(name, param);
  std::vector<optim::ParamGroup> groups;
  for (ParameterKind kind : {ParameterKind::kWeight, ParameterKind::kBias, ParameterKind::kNorm,
                             ParameterKind::kEmbedding, ParameterKind::kPositional}) {
    optim::ParamGroup group;
    group.name = parameter_kind_name(kind);
    group.lr = recipe.schedule().lr();
    group.weight_decay = decays(o, kind) ? weight_decay : 0.0;
    for (const auto& [name, k] : classify_parameters(model)) {
      if (k != kind) continue;
      group.params.push_back(params.at(name));
      group.param_names.push_back(name);
    }
    if (!group.params.empty()) groups.push_back(std::move(group));
  }
  ROTA_CHECK(!groups.empty(), "optimizer: the model has no trainable parameters (all frozen?)");
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

int64_t total_steps_from_recipe(const recipes::Recipe& recipe, int64_t steps_per_epoch) {
  if (recipe.train().has_steps()) return recipe.train().steps();
  const double epochs = recipe.train().epochs();
  return std::max<int64_t>(1, std::llround(epochs * static_cast<double>(steps_per_epoch)));
}

optim::ScheduleOptions schedule_options_from_recipe(const recipes::Recipe& recipe,
                                                    int64_t total_steps) {
  const recipes::Schedule& s = recipe.schedule();
  optim::ScheduleOptions o;
  switch (s.kind()) {
    case recipes::Schedule::CONSTANT:
      o.name = optim::ScheduleName::kConstant;
      break;
    case recipes::Schedule::LINEAR:
      o.name = optim::ScheduleName::kLinear;
      break;
    case recipes::Schedule::COSINE:
      o.name = optim::ScheduleName::kCosine;
      break;
    case recipes::Schedule::INVERSE_SQRT:
      o.name = optim::ScheduleName::kInverseSqrt;
      break;
  }
  o.lr = s.lr();
  o.min_lr = s.kind() == recipes::Schedule::CONSTANT ? 0.0 : s.min_lr();
  o.warmup_steps = s.warmup_steps();
  o.warmup_start_factor = s.warmup_start_factor();
  o.total_steps = total_steps;
  ROTA_CHECK(o.warmup_steps < total_steps,
             "schedule.warmup_steps: {} warm-up steps do not fit in a run of {} steps",
             o.warmup_steps, total_steps);
  return o;
}

}  // namespace rota::cli
