// Module registration, depth-first traversal with dotted names, and state dict load/save.
#include "framework/nn/module.h"

#include <unordered_set>

#include <fmt/format.h>

namespace rota::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "\n  " + line;
  return out;
}

}  // namespace

// ---- StateDict ----

// ---- registration ----

void Module::check_new_name(const std::string& name, const char* what) const {
  ROTA_CHECK(!name.empty(), "Module: empty {} name", what);
  ROTA_CHECK(name.find('.') == std::string::npos,
             "Module: {} name '{}' contains '.', which separates nesting levels", what, name);
  auto taken = [&](const auto& list) {
    for (const auto& entry : list) {
      if (entry.first == name) return true;
    }
    return false;
  };
  ROTA_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_),
             "Module: cannot register {} '{}': the name is already used by a parameter, buffer "
             "or child of this module",
             what, name);
}

Variable Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  ROTA_CHECK(value.defined(), "register_parameter: tensor for '{}' is undefined", name);
  return register_parameter(name, Variable(value.contiguous(), requires_grad));
}

Variable Module::register_parameter(const std::string& name, const Variable& param) {
  check_new_name(name, "parameter");
  ROTA_CHECK(param.defined(), "register_parameter: variable for '{}' is undefined", name);
  ROTA_CHECK(param.is_leaf(),
             "register_parameter: '{}' is the result of an op; parameters must be leaves", name);
  ROTA_CHECK(param.data().is_contiguous(),
             "register_parameter: '{}' {} is not contiguous (optimizers update it in place)", name,
             shape_str(param.shape()));
  parameters_.emplace_back(name, param);
  return param;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name, "buffer");
  ROTA_CHECK(value.defined(), "register_buffer: tensor for '{}' is undefined", name);
  buffers_.emplace_back(name, value);
  return value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  ROTA_CHECK(module != nullptr, "register_module: module '{}' is null", name);
  ROTA_CHECK(module.get() != this, "register_module: module '{}' cannot contain itself", name);
  children_.emplace_back(name, std::move(module));
}

// ---- traversal ----

void Module::collect_parameters(const std::string& prefix,
                                std::vector<std::pair<std::string, Variable>>& out) const {
  for (const auto& [name, param] : parameters_) out.emplace_back(join_name(prefix, name), param);
  for (const auto& [name, child] : children_) {
    child->collect_parameters(join_name(prefix, name), out);
  }
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> all;
  collect_parameters("", all);
  // Shared parameters appear once, under the first name (the optimizer must see them once).
  std::unordered_set<const VariableImpl*> seen;
  std::vector<std::pair<std::string, Variable>> unique;
  for (auto& entry : all) {
    if (seen.insert(entry.second.impl()).second) unique.push_back(std::move(entry));
  }
  return unique;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& entry : named_parameters()) out.push_back(std::move(entry.second));
  return out;
}

void Module::collect_buffers(const std::string& prefix,
                             std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, buffer] : buffers_) out.emplace_back(join_name(prefix, name), buffer);
  for (const auto& [name, child] : children_) child->collect_buffers(join_name(prefix, name), out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", out);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

void Module::collect_modules(const std::string& prefix,
                             std::vector<std::pair<std::string, Module*>>& out) {
  out.emplace_back(prefix, this);
  for (const auto& [name, child] : children_) child->collect_modules(join_name(prefix, name), out);
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  collect_modules("", out);
  return out;
}

const Variable& Module::parameter(const std::string& name) const {
  for (const auto& entry : parameters_) {
    if (entry.first == name) return entry.second;
  }
  fail("Module::parameter: no parameter '{}' on this module", name);
}

// ---- modes and gradients ----

void Module::train(bool training) {
  training_ = training;
  on_train_mode_changed(training);
  for (const auto& entry : children_) entry.second->train(training);
}

void Module::zero_grad() {
  for (auto& param : parameters()) param.zero_grad();
}

int64_t Module::num_parameters() const {
  int64_t total = 0;
  for (const auto& param : parameters()) total += param.numel();
  return total;
}

// ---- state dict ----

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, param] : parameters_) out.insert(join_name(prefix, name), param.data());
  for (const auto& [name, buffer] : buffers_) out.insert(join_name(prefix, name), buffer);
  for (const auto& [name, child] : children_) child->collect_state(join_name(prefix, name), out);
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  const StateDict own = state_dict();
  std::vector<std::string> problems;
  std::vector<std::string> missing;
  for (const auto& [name, target] : own) {
    if (!state.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const Tensor& source = state.at(name);
    if (source.shape() != target.shape()) {
      problems.push_back(fmt::format("'{}': checkpoint has shape {}, module has {}", name,
                                     shape_str(source.shape()), shape_str(target.shape())));
    }
    // Precisions convert (a bf16 checkpoint into an f32 model), kinds never: integer bits read
    // as floats (or the reverse) are garbage, e.g. an F32 tensor relabelled I32 in the file.
    if (is_floating(source.dtype()) != is_floating(target.dtype())) {
      problems.push_back(fmt::format(
          "'{}': checkpoint holds {} but the module holds {} (integer and floating-point "
          "tensors are never converted into each other)",
          name, dtype_name(source.dtype()), dtype_name(target.dtype())));
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& entry : state) {
    if (!own.contains(entry.first)) unexpected.push_back(entry.first);
  }
  if (strict) {
    for (const auto& name : missing) problems.push_back(fmt::format("missing '{}'", name));
    for (const auto& name : unexpected) problems.push_back(fmt::format("unexpected '{}'", name));
  }
  // Check everything before writing anything, so a failed load leaves the module untouched.
  ROTA_CHECK(problems.empty(), "load_state_dict: {} problem(s):{}", problems.size(),
             join_lines(problems));
  for (const auto& [name, target] : own) {
    if (!state.contains(name)) continue;
    Tensor destination = target;  // shares storage: the module's parameter/buffer is updated
    destination.copy_from(state.at(name));
  }
}

const char* parameter_role_name(ParameterRole role) {
  switch (role) {
    case ParameterRole::kWeight:
      return "weights";
    case ParameterRole::kBias:
      return "biases";
    case ParameterRole::kNorm:
      return "norms";
    case ParameterRole::kEmbedding:
      return "embeddings";
    case ParameterRole::kPositional:
      return "positional";
  }
  return "?";
}

std::vector<std::pair<std::string, ParameterRole>> parameter_roles(Module& model) {
  // Module prefixes ("encoder.blocks.0.ln1.") that decide their parameters' role; the deepest
  // one wins (an embedding inside a positional module is an embedding).
  std::vector<std::pair<std::string, ParameterRole>> prefixes;
  for (auto& [name, module] : model.named_modules()) {
    if (auto role = module->parameter_role()) {
      prefixes.emplace_back(name.empty() ? "" : name + ".", *role);
    }
  }
  std::vector<std::pair<std::string, ParameterRole>> result;
  for (const auto& [name, param] : model.named_parameters()) {
    if (!param.requires_grad()) continue;
    std::optional<ParameterRole> role;
    size_t best_length = 0;
    for (const auto& [prefix, r] : prefixes) {
      if (name.compare(0, prefix.size(), prefix) == 0 && (!role || prefix.size() > best_length)) {
        role = r;
        best_length = prefix.size();
      }
    }
    if (!role) role = param.data().dim() >= 2 ? ParameterRole::kWeight : ParameterRole::kBias;
    result.emplace_back(name, *role);
  }
  return result;
}

}  // namespace rota::nn
