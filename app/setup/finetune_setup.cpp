// Loading pretrained weights for fine-tuning and freezing parameters (see finetune_setup.h).
#include "app/setup/finetune_setup.h"

#include <algorithm>
#include <set>

#include "app/setup/linearize_setup.h"
#include "app/setup/lora_setup.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "framework/nn/linear.h"
#include "framework/nn/lora.h"
#include "recipes/loader.h"

namespace rota::app {
namespace {

std::string join_names(const std::vector<std::string>& names, size_t limit = 8) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < limit; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > limit) text += fmt::format(", ... ({} in all)", names.size());
  return text;
}

}  // namespace

std::optional<recipes::Model> pretrained_model(const std::string& init_from) {
  try {
    const std::filesystem::path checkpoint = io::resolve_checkpoint(init_from);
    const std::filesystem::path file = checkpoint / io::kRecipeFile;
    return recipes::load_recipe_text(recipes::read_text_file(file), file.string()).model();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int64_t freeze_parameters(nn::Module& model, const std::vector<std::string>& patterns) {
  std::set<std::string> embedding_names;
  for (const auto& [name, role] : nn::parameter_roles(model)) {
    if (role == nn::ParameterRole::kEmbedding) embedding_names.insert(name);
  }
  int64_t frozen = 0;
  for (const std::string& pattern : patterns) {
    int64_t matched = 0;
    for (auto& [name, param] : model.named_parameters()) {
      const bool match = pattern == "embeddings" ? embedding_names.count(name) != 0
                         : pattern == "encoder"  ? name.rfind("encoder.", 0) == 0
                                                 : name.rfind(pattern, 0) == 0;
      if (!match) continue;
      ++matched;
      if (param.requires_grad()) {
        Variable(param).set_requires_grad(false);
        ++frozen;
      }
    }
    ROTA_CHECK(matched > 0, "finetune.freeze: '{}' matches no parameter of the model", pattern);
  }
  return frozen;
}

namespace {

// A pretrained checkpoint that holds adapters (a finetune.lora run): its adapters folded into
// its weights with its own recipe's alpha / rank. Returns the names whose values changed.
std::set<std::string> merge_source_adapters(io::Checkpoint& pretrained,
                                            const std::filesystem::path& source) {
  if (!nn::has_lora_adapters(pretrained.model)) return {};
  const std::string where = (source / io::kRecipeFile).string();
  const recipes::Recipe source_recipe = recipes::load_recipe_text(pretrained.recipe_text, where);
  ROTA_CHECK(source_recipe.has_finetune() && source_recipe.finetune().has_lora(),
             "finetune.init_from: {} holds low-rank adapters but its recipe has no "
             "finetune.lora to say their scale",
             source.string());
  const double scale = lora_options_from_recipe(source_recipe.finetune().lora()).scale();
  std::set<std::string> changed;
  for (const std::string& owner : nn::merge_lora_adapters(pretrained.model, scale)) {
    changed.insert(owner + ".weight");
  }
  io::log_info("finetune: folded the low-rank adapters of {} layers of {} into their weights",
               changed.size(), source.string());
  return changed;
}

bool is_adapter_tensor(const std::string& name) {
  for (const char* kind : {nn::kLoraA, nn::kLoraB}) {
    const std::string suffix = std::string(".") + kind;
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  return false;
}

// The base reference of a finetune.lora run: the state-dict entries that are frozen (or
// buffers) and were loaded unchanged from `source`.
io::BaseWeights base_weights_of(const nn::Module& model, const std::filesystem::path& source,
                                const io::Checkpoint& pretrained,
                                const std::set<std::string>& unchanged) {
  std::set<const void*> trainable;
  for (const auto& [name, param] : model.named_parameters()) {
    if (param.requires_grad()) trainable.insert(param.data().storage().get());
  }
  io::BaseWeights base;
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::weakly_canonical(source, error);
  base.set_checkpoint((error ? std::filesystem::absolute(source) : absolute).string());
  bool found = false;
  for (const io::FileCheck& check : pretrained.state.files()) {
    if (check.name() != io::kModelFile) continue;
    base.set_model_size(check.size());
    base.set_model_crc32c(check.crc32c());
    found = true;
  }
  ROTA_CHECK(found, "finetune.init_from: {} has no check of its {}", source.string(),
             io::kModelFile);
  for (const auto& [name, tensor] : model.state_dict()) {
    if (unchanged.count(name) != 0 && trainable.count(tensor.storage().get()) == 0) {
      base.add_names(name);
    }
  }
  for (const auto& [name, param] : model.named_parameters()) {
    if (!param.requires_grad()) base.add_frozen(name);
  }
  return base;
}

}  // namespace

FinetuneResult apply_finetune(const recipes::Recipe& recipe, nn::Module& model) {
  FinetuneResult result;
  if (!recipe.has_finetune()) return result;
  const recipes::Finetune& f = recipe.finetune();
  const std::filesystem::path source = io::resolve_checkpoint(f.init_from());
  io::Checkpoint pretrained = io::load_checkpoint(source);
  std::set<std::string> merged = merge_source_adapters(pretrained, source);
  if (recipe.has_linearize()) {
    // A grouped-query teacher: its k/v projections repeated per group for the linear student.
    const recipes::Model teacher =
        recipes::load_recipe_text(pretrained.recipe_text, (source / io::kRecipeFile).string())
            .model();
    for (const std::string& name :
         expand_grouped_kv(pretrained.model, teacher.heads(), teacher.kv_heads(),
                           teacher.width() / std::max(1, teacher.heads()))) {
      merged.insert(name);
    }
  }
  const StateDict own = model.state_dict();
  std::vector<std::string> missing, unused, mismatched;
  StateDict selected;
  std::set<std::string> unchanged;
  for (const auto& [name, tensor] : own) {
    if (!pretrained.model.contains(name)) {
      // The run's own adapters start fresh (B = 0), never from the checkpoint.
      if (!is_adapter_tensor(name)) missing.push_back(name);
      continue;
    }
    const Tensor& theirs = pretrained.model.at(name);
    if (theirs.shape() != tensor.shape()) {
      mismatched.push_back(fmt::format("{} ({} in the checkpoint, {} in the model)", name,
                                       shape_str(theirs.shape()), shape_str(tensor.shape())));
      continue;
    }
    selected.insert(name, theirs);
    if (merged.count(name) == 0) unchanged.insert(name);
  }
  for (const auto& [name, tensor] : pretrained.model) {
    if (!own.contains(name)) unused.push_back(name);
  }
  ROTA_CHECK(mismatched.empty(),
             "finetune.init_from: {} does not fit this model (is model {{...}} the same as the "
             "pretrained recipe's?): shapes differ for {}",
             source.string(), join_names(mismatched, 4));
  if (f.strictness() == recipes::Finetune::STRICT) {
    ROTA_CHECK(missing.empty() && unused.empty(),
               "finetune.init_from: strict loading of {}: missing in the checkpoint: [{}]; not "
               "used by the model: [{}]",
               source.string(), join_names(missing), join_names(unused));
  }
  ROTA_CHECK(!selected.empty(),
             "finetune.init_from: no parameter of the model is in {} (a checkpoint of a "
             "different model?)",
             source.string());
  model.load_state_dict(selected, /*strict=*/false);
  io::log_info("finetune: {} tensors from {}", selected.size(), source.string());
  if (!missing.empty()) io::log_info("finetune: freshly initialised: {}", join_names(missing));
  if (!unused.empty())
    io::log_info("finetune: not used from the checkpoint: {}", join_names(unused));
  if (f.has_lora()) {
    std::set<std::string> loaded;
    for (const auto& [name, tensor] : selected) loaded.insert(name);
    const int64_t frozen = freeze_all_but_adapters(recipe, model, loaded);
    io::log_info("finetune.lora: rank {}, alpha {}; froze {} parameter tensors", f.lora().rank(),
                 f.lora().alpha(), frozen);
  }
  if (recipe.has_linearize() && !f.has_lora()) {
    io::log_info("linearize: attention transfer; froze {} parameter tensors outside the attention",
                 freeze_all_but_attention(model, recipe.linearize().train_projections()));
  }
  if (f.freeze_size() > 0) {
    const std::vector<std::string> patterns(f.freeze().begin(), f.freeze().end());
    io::log_info("finetune: froze {} parameters", freeze_parameters(model, patterns));
  }
  if (f.has_lora()) result.base_weights = base_weights_of(model, source, pretrained, unchanged);
  return result;
}

void refreeze_on_resume(const recipes::Recipe& recipe, nn::Module& model,
                        const io::TrainState& checkpoint_state) {
  if (!recipe.has_finetune()) return;
  if (checkpoint_state.has_base_weights()) {
    // Exactly what the run froze when it started (adapters, `train` and fresh ones train).
    const auto& names = checkpoint_state.base_weights().frozen();
    const std::set<std::string> frozen(names.begin(), names.end());
    for (auto& [name, param] : model.named_parameters()) {
      if (frozen.count(name) != 0) Variable(param).set_requires_grad(false);
    }
  }
  if (recipe.has_linearize() && !recipe.finetune().has_lora()) {
    freeze_all_but_attention(model, recipe.linearize().train_projections());
  }
  if (recipe.finetune().freeze_size() > 0) {
    freeze_parameters(model,
                      {recipe.finetune().freeze().begin(), recipe.finetune().freeze().end()});
  }
}

}  // namespace rota::app
