// Optimizer base: group checks, the step loop over params with grads, state save/load.
#include "framework/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace rota::optim {

ParamGroup make_param_group(std::vector<Variable> params, double lr, double weight_decay) {
  ParamGroup group;
  group.params = std::move(params);
  group.lr = lr;
  group.weight_decay = weight_decay;
  return group;
}

std::vector<ParamGroup> decay_param_groups(
    const std::vector<std::pair<std::string, Variable>>& named_params, double lr,
    double weight_decay) {
  ParamGroup decay;
  decay.name = "decay";
  decay.lr = lr;
  decay.weight_decay = weight_decay;
  ParamGroup no_decay;
  no_decay.name = "no_decay";
  no_decay.lr = lr;
  no_decay.weight_decay = 0.0;
  for (const auto& [name, param] : named_params) {
    if (!param.requires_grad()) continue;
    ParamGroup& group = param.dim() >= 2 ? decay : no_decay;
    group.params.push_back(param);
    group.param_names.push_back(name);
  }
  std::vector<ParamGroup> groups;
  if (!decay.params.empty()) groups.push_back(std::move(decay));
  if (!no_decay.params.empty()) groups.push_back(std::move(no_decay));
  return groups;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, const char* optimizer_name)
    : groups_(std::move(groups)) {
  ROTA_CHECK(!groups_.empty(), "{}: no parameter groups", optimizer_name);
  std::unordered_set<const VariableImpl*> seen_params;
  std::unordered_set<std::string> seen_names;
  for (size_t g = 0; g < groups_.size(); ++g) {
    ParamGroup& group = groups_[g];
    const std::string group_label = group.name.empty() ? fmt::format("group{}", g) : group.name;
    ROTA_CHECK(std::isfinite(group.lr) && group.lr >= 0.0, "{}: group '{}' has lr {}",
               optimizer_name, group_label, group.lr);
    ROTA_CHECK(std::isfinite(group.weight_decay) && group.weight_decay >= 0.0,
               "{}: group '{}' has weight_decay {}", optimizer_name, group_label,
               group.weight_decay);
    ROTA_CHECK(std::isfinite(group.lr_multiplier) && group.lr_multiplier >= 0.0,
               "{}: group '{}' has lr_multiplier {}", optimizer_name, group_label,
               group.lr_multiplier);
    ROTA_CHECK(group.param_names.empty() || group.param_names.size() == group.params.size(),
               "{}: group '{}' has {} params but {} names", optimizer_name, group_label,
               group.params.size(), group.param_names.size());
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Variable& param = group.params[i];
      const std::string name =
          group.param_names.empty() ? fmt::format("{}.{}", group_label, i) : group.param_names[i];
      ROTA_CHECK(param.defined(), "{}: parameter '{}' is undefined", optimizer_name, name);
      ROTA_CHECK(param.is_leaf(), "{}: parameter '{}' is not a leaf", optimizer_name, name);
      ROTA_CHECK(param.dtype() == DType::kF32 || param.dtype() == DType::kF64,
                 "{}: parameter '{}' {} has dtype {} (expected f32 or f64)", optimizer_name, name,
                 shape_str(param.shape()), dtype_name(param.dtype()));
      ROTA_CHECK(param.data().is_contiguous(),
                 "{}: parameter '{}' {} is not contiguous (updates are in place)", optimizer_name,
                 name, shape_str(param.shape()));
      ROTA_CHECK(seen_params.insert(param.impl()).second,
                 "{}: parameter '{}' appears twice (a parameter may be in one group only)",
                 optimizer_name, name);
      ROTA_CHECK(seen_names.insert(name).second, "{}: duplicate parameter name '{}'",
                 optimizer_name, name);
      slots_.push_back(Slot{name, param, g, ParamState{}});
    }
  }
  lr_ = groups_[0].lr_multiplier > 0.0 ? groups_[0].lr / groups_[0].lr_multiplier : groups_[0].lr;
}

ParamGroup& Optimizer::param_group(size_t index) {
  ROTA_CHECK(index < groups_.size(), "{}: param_group {} of {}", name(), index, groups_.size());
  return groups_[index];
}

void Optimizer::set_lr(double lr) {
  ROTA_CHECK(std::isfinite(lr) && lr >= 0.0, "{}: set_lr({})", name(), lr);
  lr_ = lr;
  for (auto& group : groups_) group.lr = lr * group.lr_multiplier;
}

void Optimizer::step() {
  for (Slot& slot : slots_) {
    const Tensor& grad = slot.param.grad();
    if (!slot.param.requires_grad() || !grad.defined()) continue;
    const Tensor& param = slot.param.data();
    ROTA_CHECK(grad.shape() == param.shape() && grad.dtype() == param.dtype(),
               "{}.step: gradient {} {} for parameter '{}' {} {}", name(), dtype_name(grad.dtype()),
               shape_str(grad.shape()), slot.name, dtype_name(param.dtype()),
               shape_str(param.shape()));
    // set_data may have swapped the tensor since construction; updates must stay in place.
    ROTA_CHECK(param.is_contiguous(), "{}.step: parameter '{}' {} is not contiguous", name(),
               slot.name, shape_str(param.shape()));
    const ParamGroup& group = groups_[slot.group];
    ++slot.state.step;
    update(group, param, grad.contiguous(), slot.state);
  }
  ++step_count_;
}

void Optimizer::zero_grad() {
  for (Slot& slot : slots_) slot.param.zero_grad();
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("step", scalar_tensor(static_cast<double>(step_count_), DType::kI64));
  for (const Slot& slot : slots_) {
    if (slot.state.step == 0 && slot.state.buffers.empty()) continue;
    out.emplace_back(slot.name + ".step",
                     scalar_tensor(static_cast<double>(slot.state.step), DType::kI64));
    for (const auto& [suffix, tensor] : slot.state.buffers) {
      out.emplace_back(slot.name + "." + suffix, tensor);
    }
  }
  return out;
}

void Optimizer::load_state(const std::vector<std::pair<std::string, Tensor>>& state) {
  std::unordered_map<std::string, size_t> slot_by_name;
  for (size_t i = 0; i < slots_.size(); ++i) slot_by_name.emplace(slots_[i].name, i);
  const std::vector<std::string> suffixes = state_suffixes();

  // Validate everything first, then replace: a failed load leaves the optimizer untouched.
  std::vector<ParamState> fresh(slots_.size());
  int64_t step_count = 0;
  bool have_step_count = false;
  std::unordered_set<std::string> seen;
  auto read_count = [&](const std::string& key, const Tensor& t) {
    ROTA_CHECK(t.defined() && t.numel() == 1, "{}.load_state: '{}' must be a scalar, got {}",
               name(), key, t.defined() ? shape_str(t.shape()) : "undefined");
    const double value = t.item();
    ROTA_CHECK(value >= 0 && value == std::floor(value), "{}.load_state: '{}' = {} is not a count",
               name(), key, value);
    return static_cast<int64_t>(value);
  };
  for (const auto& [key, tensor] : state) {
    ROTA_CHECK(seen.insert(key).second, "{}.load_state: duplicate entry '{}'", name(), key);
    if (key == "step") {
      step_count = read_count(key, tensor);
      have_step_count = true;
      continue;
    }
    const size_t dot = key.rfind('.');
    ROTA_CHECK(dot != std::string::npos && dot > 0,
               "{}.load_state: unexpected entry '{}' (expected '<param>.<suffix>')", name(), key);
    const std::string param_name = key.substr(0, dot);
    const std::string suffix = key.substr(dot + 1);
    const auto it = slot_by_name.find(param_name);
    ROTA_CHECK(it != slot_by_name.end(), "{}.load_state: '{}' names no parameter of this optimizer",
               name(), key);
    const Tensor& param = slots_[it->second].param.data();
    if (suffix == "step") {
      fresh[it->second].step = read_count(key, tensor);
      continue;
    }
    ROTA_CHECK(std::find(suffixes.begin(), suffixes.end(), suffix) != suffixes.end(),
               "{}.load_state: '{}' has a suffix '{}' this optimizer does not keep", name(), key,
               suffix);
    ROTA_CHECK(tensor.defined() && tensor.shape() == param.shape(),
               "{}.load_state: '{}' has shape {}, parameter '{}' has {}", name(), key,
               tensor.defined() ? shape_str(tensor.shape()) : "undefined", param_name,
               shape_str(param.shape()));
    Tensor copy = Tensor::empty(param.shape(), param.dtype());
    copy.copy_from(tensor);
    fresh[it->second].buffers[suffix] = copy;
  }
  ROTA_CHECK(have_step_count, "{}.load_state: missing entry 'step'", name());
  step_count_ = step_count;
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i].state = std::move(fresh[i]);
}

}  // namespace rota::optim
