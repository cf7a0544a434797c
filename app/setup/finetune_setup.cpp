// Loading pretrained weights for fine-tuning and freezing parameters (see finetune_setup.h).
#include "app/setup/finetune_setup.h"

#include <set>

#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
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

void apply_finetune(const recipes::Recipe& recipe, nn::Module& model) {
  if (!recipe.has_finetune()) return;
  const recipes::Finetune& f = recipe.finetune();
  const std::filesystem::path source = io::resolve_checkpoint(f.init_from());
  const io::Checkpoint pretrained = io::load_checkpoint(source);
  const StateDict own = model.state_dict();
  std::vector<std::string> missing, unused, mismatched;
  StateDict selected;
  for (const auto& [name, tensor] : own) {
    if (!pretrained.model.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const Tensor& theirs = pretrained.model.at(name);
    if (theirs.shape() != tensor.shape()) {
      mismatched.push_back(fmt::format("{} ({} in the checkpoint, {} in the model)", name,
                                       shape_str(theirs.shape()), shape_str(tensor.shape())));
      continue;
    }
    selected.insert(name, theirs);
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
  if (f.freeze_size() > 0) {
    const std::vector<std::string> patterns(f.freeze().begin(), f.freeze().end());
    io::log_info("finetune: froze {} parameters", freeze_parameters(model, patterns));
  }
}

}  // namespace rota::app
