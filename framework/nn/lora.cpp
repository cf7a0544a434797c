// Low-rank adapters on a model's Linear layers (see lora.h).
#include "framework/nn/lora.h"

#include <algorithm>
#include <map>
#include <set>

#include "framework/autograd/ops/matmul.h"
#include "framework/base/error.h"

namespace rota::nn {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "<m>.lora_a" -> "<m>" (empty when `name` is not an adapter tensor of that kind).
std::string adapter_owner(const std::string& name, const char* kind) {
  const std::string suffix = std::string(".") + kind;
  return ends_with(name, suffix) ? name.substr(0, name.size() - suffix.size()) : std::string();
}

}  // namespace

bool lora_target_matches(const std::string& name, const std::string& target) {
  if (target.empty() || name.empty()) return false;
  return name == target || ends_with(name, "." + target);
}

std::vector<std::string> add_lora_adapters(Module& root, const std::vector<std::string>& targets,
                                           const LoraOptions& options, Generator& init_gen,
                                           std::shared_ptr<Generator> dropout_gen,
                                           const std::vector<std::string>& refused) {
  ROTA_CHECK(!targets.empty(), "LoRA: no target layers");
  const std::vector<std::pair<std::string, Module*>> modules = root.named_modules();
  std::set<std::string> selected;
  for (const std::string& target : targets) {
    int64_t matched = 0;
    for (const auto& [name, module] : modules) {
      if (!lora_target_matches(name, target)) continue;
      ++matched;
      ROTA_CHECK(dynamic_cast<Linear*>(module) != nullptr,
                 "LoRA target '{}' selects {}, which is not a linear layer (adapters go on "
                 "linear projections such as q_proj or fc1)",
                 target, name);
      ROTA_CHECK(std::find(refused.begin(), refused.end(), name) == refused.end(),
                 "LoRA target '{}' selects {}, which cannot take an adapter (its weight is used "
                 "outside the layer's own product, e.g. fused with the loss)",
                 target, name);
      selected.insert(name);
    }
    ROTA_CHECK(matched > 0, "LoRA target '{}' selects no layer of the model", target);
  }
  std::vector<std::string> adapted;
  for (const auto& [name, module] : modules) {
    if (selected.count(name) == 0) continue;
    auto* linear = dynamic_cast<Linear*>(module);
    if (linear->has_lora()) continue;  // the same module reached under a second name
    linear->add_lora(options, init_gen, dropout_gen);
    adapted.push_back(name);
  }
  return adapted;
}

std::vector<std::string> merge_lora_adapters(StateDict& state, double scale) {
  std::vector<std::string> owners;
  for (const auto& [name, tensor] : state) {
    const std::string a_owner = adapter_owner(name, kLoraA);
    const std::string b_owner = adapter_owner(name, kLoraB);
    if (!a_owner.empty()) {
      ROTA_CHECK(state.contains(a_owner + "." + kLoraB), "LoRA merge: {} has no {}.{}", name,
                 a_owner, kLoraB);
      owners.push_back(a_owner);
    } else if (!b_owner.empty()) {
      ROTA_CHECK(state.contains(b_owner + "." + kLoraA), "LoRA merge: {} has no {}.{}", name,
                 b_owner, kLoraA);
    }
  }
  if (owners.empty()) return owners;
  std::set<std::string> dropped;
  std::map<std::string, Tensor> replaced;
  for (const std::string& owner : owners) {
    const std::string weight_name = owner + ".weight";
    ROTA_CHECK(state.contains(weight_name), "LoRA merge: adapters of {} but no {}", owner,
               weight_name);
    const Tensor& weight = state.at(weight_name);
    const Tensor& a = state.at(owner + "." + kLoraA);
    const Tensor& b = state.at(owner + "." + kLoraB);
    ROTA_CHECK(weight.dim() == 2 && a.dim() == 2 && b.dim() == 2 && b.size(1) == a.size(0) &&
                   b.size(0) == weight.size(0) && a.size(1) == weight.size(1),
               "LoRA merge: {} {} does not chain with {} {} and {} {} (expected [out, r], "
               "[r, in] for a weight [out, in])",
               weight_name, shape_str(weight.shape()), kLoraB, shape_str(b.shape()), kLoraA,
               shape_str(a.shape()));
    // W' = W + scale · B A, in double: [out, r] · [r, in] -> [out, in].
    const Tensor delta = matmul(Variable(b.to(DType::kF64)), Variable(a.to(DType::kF64))).data();
    const std::vector<double> w = weight.to_double_vector();
    const std::vector<double> d = delta.to_double_vector();
    std::vector<double> sum(w.size());
    for (size_t i = 0; i < w.size(); ++i) sum[i] = w[i] + scale * d[i];
    replaced.emplace(weight_name, tensor_from(sum, weight.shape(), weight.dtype()));
    dropped.insert(owner + "." + kLoraA);
    dropped.insert(owner + "." + kLoraB);
  }
  StateDict out;
  for (const auto& [name, tensor] : state) {
    if (dropped.count(name) != 0) continue;
    const auto found = replaced.find(name);
    out.insert(name, found != replaced.end() ? found->second : tensor);
  }
  state = std::move(out);
  return owners;
}

bool has_lora_adapters(const StateDict& state) {
  for (const auto& [name, tensor] : state) {
    if (!adapter_owner(name, kLoraA).empty() || !adapter_owner(name, kLoraB).empty()) return true;
  }
  return false;
}

}  // namespace rota::nn
