// `rota export hf`: config.json + model.safetensors + tokenizer + rota.torch modeling code.
#include "app/run/hf_export.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "app/run/exit_codes.h"
#include "app/setup/lora_setup.h"
#include "data/source/label_map.h"
#include "data/tokenizer/huggingface/hf_export.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/safetensors.h"
#include "framework/nn/lora.h"
#include "recipes/loader.h"

namespace rota::app {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTokenizerDir = "rota_tokenizer";

struct KindNames {
  const char* kind;          // rota.torch's config.kind
  const char* architecture;  // the modeling_rota.py class
  const char* auto_class;    // the transformers Auto class it registers with
};

KindNames kind_names(recipes::Model::Kind kind) {
  switch (kind) {
    case recipes::Model::CAUSAL_LM:
      return {"causal_lm", "RotaForCausalLM", "AutoModelForCausalLM"};
    case recipes::Model::MASKED_LM:
      return {"masked_lm", "RotaForMaskedLM", "AutoModelForMaskedLM"};
    case recipes::Model::CLASSIFIER:
      return {"classifier", "RotaForSequenceClassification", "AutoModelForSequenceClassification"};
  }
  fail("export hf: unknown model kind {}", static_cast<int>(kind));
}

int64_t rows_of(const io::Checkpoint& checkpoint, const std::string& name, const fs::path& dir) {
  ROTA_CHECK(checkpoint.model.contains(name) && checkpoint.model.at(name).dim() == 2,
             "export hf: {} has no 2-D tensor {} (not a Rota model checkpoint)", dir.string(),
             name);
  return checkpoint.model.at(name).size(0);
}

/// The Rota tokenizer saved under rota_tokenizer/, and its Hugging Face form as tokenizer.json
/// when it has one: byte/char/word tokenizers write tokenizer.hf.json, a Hugging Face tokenizer
/// is saved as its own tokenizer.json; SentencePiece models have no such form here.
void export_tokenizer(const fs::path& checkpoint_dir, const fs::path& out, HfExportResult& result) {
  const std::unique_ptr<data::Tokenizer> tokenizer = data::load_tokenizer(checkpoint_dir);
  const fs::path own = out / kTokenizerDir;
  fs::create_directory(own);
  tokenizer->save(own);
  fsync_directory_tree(own);
  const fs::path hf_form = own / data::hf::kHuggingFaceExportFile;
  if (fs::exists(hf_form)) {
    write_file_atomically(out / "tokenizer.json", read_file(hf_form));
    result.tokenizer_json = true;
    return;
  }
  const std::string saved = read_file(own / "tokenizer.json");
  const nlohmann::json parsed = nlohmann::json::parse(saved, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_object() && !parsed.contains("format") &&
      parsed.contains("model")) {
    write_file_atomically(out / "tokenizer.json", saved);
    result.tokenizer_json = true;
    return;
  }
  const std::string kind =
      parsed.is_object() && parsed.contains("kind") ? parsed["kind"].dump() : "unknown kind";
  result.note = fmt::format(
      "this run's tokenizer ({}) has no Hugging Face tokenizer.json form{}; {}/ holds Rota's "
      "files (rota.torch.load_tokenizer reads them)",
      kind,
      kind == "\"word\"" ? " (its vocabulary holds words that are not valid UTF-8, which a "
                           "tokenizer.json, a UTF-8 JSON file, cannot hold)"
                         : "",
      kTokenizerDir);
}

nlohmann::json config_json(const io::Checkpoint& checkpoint, const recipes::Recipe& recipe,
                           const fs::path& dir) {
  const KindNames names = kind_names(recipe.model().kind());
  nlohmann::json config;
  config["model_type"] = "rota";
  config["architectures"] = {names.architecture};
  config["auto_map"] = {{"AutoConfig", "modeling_rota.RotaHfConfig"},
                        {names.auto_class, std::string("modeling_rota.") + names.architecture}};
  config["rota_kind"] = names.kind;
  config["vocab_size"] = rows_of(checkpoint, "encoder.embed.weight", dir);
  config["hidden_size"] = recipe.model().width();
  config["num_hidden_layers"] = recipe.model().layers();
  config["num_attention_heads"] = recipe.model().heads();
  config["torch_dtype"] = "float32";
  if (recipe.model().kind() == recipes::Model::CLASSIFIER) {
    const int64_t classes = rows_of(checkpoint, "classifier.weight", dir);
    config["num_labels"] = classes;
    const auto labels = checkpoint.extra_files.find(data::kLabelsFile);
    nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
    if (labels != checkpoint.extra_files.end()) {
      const data::LabelMap map =
          data::LabelMap::from_json(labels->second, (dir / data::kLabelsFile).string());
      for (int64_t i = 0; i < map.size(); ++i) {
        id2label[std::to_string(i)] = map.name(i);
        label2id[map.name(i)] = i;
      }
    } else {
      for (int64_t i = 0; i < classes; ++i) {
        id2label[std::to_string(i)] = std::to_string(i);
        label2id[std::to_string(i)] = i;
      }
    }
    config["id2label"] = id2label;
    config["label2id"] = label2id;
  }
  // rota.torch builds the model from the resolved recipe itself: one definition of the model.
  config["rota_recipe"] = checkpoint.recipe_text;
  config["rota_export_version"] = 1;
  return config;
}

}  // namespace

HfExportResult export_hf(const fs::path& run_or_checkpoint, const fs::path& out) {
  HfExportResult result;
  result.checkpoint = io::resolve_checkpoint(run_or_checkpoint);
  result.out = out;
  ROTA_CHECK(!out.empty(), "export hf: the output directory is empty");
  ROTA_CHECK(!fs::exists(out) || (fs::is_directory(out) && fs::is_empty(out)),
             "export hf: {} already exists and is not an empty directory (refusing to mix an "
             "export with other files)",
             out.string());
  io::Checkpoint checkpoint = io::load_checkpoint(result.checkpoint);
  recipes::Recipe recipe = recipes::load_recipe_text(checkpoint.recipe_text,
                                                     (result.checkpoint / "recipe.txtpb").string());
  // A run trained with low-rank adapters: the export is the merged model, W + (alpha/rank)·BA
  // (its frozen weights come from the base checkpoint load_checkpoint followed), and its recipe
  // no longer mentions adapters.
  const bool merge = nn::has_lora_adapters(checkpoint.model);
  if (merge) {
    ROTA_CHECK(recipe.has_finetune() && recipe.finetune().has_lora(),
               "export hf: {} holds low-rank adapters but its recipe has no finetune.lora to say "
               "their scale",
               result.checkpoint.string());
    const std::vector<std::string> merged = nn::merge_lora_adapters(
        checkpoint.model, lora_options_from_recipe(recipe.finetune().lora()).scale());
    result.merged_adapters = static_cast<int64_t>(merged.size());
    recipe.mutable_finetune()->clear_lora();
    checkpoint.recipe_text = recipes::format_recipe(recipe);
  }

  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  ROTA_CHECK(fs::is_directory(parent), "export hf: {} is not a directory", parent.string());
  const fs::path temp =
      parent / fmt::format(".{}.tmp.{}", out.filename().string(), static_cast<long>(getpid()));
  fs::remove_all(temp);
  fs::create_directory(temp);
  try {
    if (merge || checkpoint.state.has_base_weights()) {
      io::save_safetensors(temp / "model.safetensors", checkpoint.model);
    } else {
      write_file_atomically(temp / "model.safetensors",
                            read_file(result.checkpoint / "model.safetensors"));
    }
    write_file_atomically(temp / "config.json",
                          config_json(checkpoint, recipe, result.checkpoint).dump(2) + "\n");
    export_tokenizer(result.checkpoint, temp, result);
    for (const EmbeddedTextFile& file : rota_torch_sources()) {
      if (std::string_view(file.name) == "__init__.py") continue;  // a flat module directory
      write_file_atomically(temp / file.name, file.text);
    }
    fsync_directory(temp);
    if (fs::exists(out)) fs::remove(out);  // the empty directory checked above
    fs::rename(temp, out);
    fsync_directory(parent);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    throw;
  }
  return result;
}

int run_hf_export(const std::string& run_or_checkpoint, const std::string& out) {
  try {
    const HfExportResult result = export_hf(run_or_checkpoint, out);
    std::cout << fmt::format("exported {} to {}\n", result.checkpoint.string(), out);
    if (result.merged_adapters > 0) {
      std::cout << fmt::format("low-rank adapters: merged into the weights of {} layers\n",
                               result.merged_adapters);
    }
    std::cout << (result.tokenizer_json
                      ? "tokenizer.json: written\n"
                      : fmt::format("tokenizer.json: not written: {}\n", result.note));
    std::cout << fmt::format(
        "load it with: import rota.torch; rota.torch.from_pretrained(\"{}\")\n", out);
    return kExitOk;
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return exit_code_of(error);
  }
}

}  // namespace rota::app
