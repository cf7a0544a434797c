// Low-rank adapters from a recipe's finetune.lora (see lora_setup.h).
#include "app/setup/lora_setup.h"

#include <map>

#include "framework/base/error.h"
#include "framework/io/log.h"
#include "framework/nn/lora.h"

namespace rota::app {
namespace {

bool is_adapter_name(const std::string& name) {
  const auto ends_with = [&name](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(std::string(".") + nn::kLoraA) || ends_with(std::string(".") + nn::kLoraB);
}

// The parameters a finetune.lora.train entry names: a role shorthand or a name prefix.
bool train_entry_matches(const std::string& entry, const std::string& name,
                         nn::ParameterRole role) {
  if (entry == "biases") return role == nn::ParameterRole::kBias;
  if (entry == "norms") return role == nn::ParameterRole::kNorm;
  if (entry == "embeddings") return role == nn::ParameterRole::kEmbedding;
  if (entry == "positional") return role == nn::ParameterRole::kPositional;
  return name.rfind(entry, 0) == 0;
}

}  // namespace

const std::vector<std::string>& default_lora_targets() {
  static const std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "out_proj"};
  return targets;
}

nn::LoraOptions lora_options_from_recipe(const recipes::Lora& lora) {
  nn::LoraOptions options;
  options.rank = lora.rank();
  options.alpha = lora.alpha();
  options.dropout = lora.dropout();
  return options;
}

std::vector<std::string> add_recipe_adapters(const recipes::Recipe& recipe, nn::Module& model,
                                             Generator& init_gen,
                                             std::shared_ptr<Generator> dropout_gen) {
  if (!recipe.has_finetune() || !recipe.finetune().has_lora()) return {};
  const recipes::Lora& lora = recipe.finetune().lora();
  std::vector<std::string> targets(lora.targets().begin(), lora.targets().end());
  if (targets.empty()) targets = default_lora_targets();
  try {
    return nn::add_lora_adapters(model, targets, lora_options_from_recipe(lora), init_gen,
                                 std::move(dropout_gen), {"lm_head"});
  } catch (const Error& e) {
    fail("finetune.lora: {}", e.what());
  }
}

int64_t freeze_all_but_adapters(const recipes::Recipe& recipe, nn::Module& model,
                                const std::set<std::string>& from_checkpoint) {
  if (!recipe.has_finetune() || !recipe.finetune().has_lora()) return 0;
  const recipes::Lora& lora = recipe.finetune().lora();
  std::map<std::string, nn::ParameterRole> roles;
  for (const auto& [name, role] : nn::parameter_roles(model)) roles.emplace(name, role);
  std::vector<int64_t> matched(lora.train_size(), 0);
  int64_t frozen = 0;
  for (auto& [name, param] : model.named_parameters()) {
    if (!param.requires_grad()) continue;
    const auto role = roles.find(name);
    bool trains = is_adapter_name(name) || from_checkpoint.count(name) == 0;
    for (int i = 0; i < lora.train_size(); ++i) {
      if (role != roles.end() && train_entry_matches(lora.train(i), name, role->second)) {
        ++matched[i];
        trains = true;
      }
    }
    if (!trains) {
      Variable(param).set_requires_grad(false);
      ++frozen;
    }
  }
  for (int i = 0; i < lora.train_size(); ++i) {
    const std::string& entry = lora.train(i);
    const bool role =
        entry == "biases" || entry == "norms" || entry == "embeddings" || entry == "positional";
    if (role && matched[i] == 0) {
      // A model without that kind of parameter (e.g. no positional ones): nothing to train.
      io::log_info("finetune.lora.train: the model has no {} to train", entry);
      continue;
    }
    ROTA_CHECK(matched[i] > 0,
               "finetune.lora.train: '{}' matches no trainable parameter of the model", entry);
  }
  return frozen;
}

}  // namespace rota::app
