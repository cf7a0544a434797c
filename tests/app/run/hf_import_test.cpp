// `rota import hf` on model directories written here by hand: mapping, recipe, refusals, cleanup.
#include "app/run/hf_import.h"

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/tasks/checkpoint_task.h"
#include "data/tokenizer/open_tokenizer.h"
#include "framework/base/file_io.h"
#include "framework/io/safetensors.h"
#include "framework/tensor/random.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/support/expect_error.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::expect_error;
using testing::TempDir;

constexpr int64_t kWidth = 8, kLayers = 1, kFfn = 12, kPositions = 16;

fs::path tokenizer_file() {
  return fs::path(ROTA_SOURCE_DIR) / "tests/golden/tokenizers/gpt2_bpe.json";
}

int64_t tokenizer_size() {
  static const int64_t size = data::open_tokenizer(tokenizer_file())->vocab_size();
  return size;
}

/// A GPT2LMHeadModel directory as save_pretrained writes it (Conv1D weights [in, out]), with
/// every weight a distinct random tensor so that a misplaced one shows.
struct Gpt2Dir {
  json config;
  io::NamedTensors tensors;
  void write(const fs::path& dir) const {
    fs::create_directories(dir);
    write_file_atomically(dir / "config.json", config.dump(2));
    io::save_safetensors(dir / "model.safetensors", tensors);
    fs::copy_file(tokenizer_file(), dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  }
  Tensor at(const std::string& name) const {
    for (const auto& [n, t] : tensors)
      if (n == name) return t;
    throw Error("no " + name);
  }
};

Gpt2Dir gpt2() {
  Gpt2Dir d;
  d.config = {{"architectures", {"GPT2LMHeadModel"}},
              {"model_type", "gpt2"},
              {"vocab_size", tokenizer_size()},
              {"n_positions", kPositions},
              {"n_embd", kWidth},
              {"n_layer", kLayers},
              {"n_head", 2},
              {"n_inner", kFfn},
              {"activation_function", "gelu_new"},
              {"resid_pdrop", 0.0},
              {"embd_pdrop", 0.0},
              {"attn_pdrop", 0.0},
              {"layer_norm_epsilon", 1e-5},
              {"initializer_range", 0.02},
              {"scale_attn_weights", true},
              {"bos_token_id", 0},
              {"transformers_version", "5.25.0"},
              {"dtype", "float32"}};
  Generator gen(7);
  auto add = [&](const std::string& name, Shape shape) {
    d.tensors.emplace_back(name, randn(shape, gen));
  };
  add("transformer.wte.weight", {tokenizer_size(), kWidth});
  add("transformer.wpe.weight", {kPositions, kWidth});
  add("transformer.h.0.ln_1.weight", {kWidth});
  add("transformer.h.0.ln_1.bias", {kWidth});
  add("transformer.h.0.attn.c_attn.weight", {kWidth, 3 * kWidth});
  add("transformer.h.0.attn.c_attn.bias", {3 * kWidth});
  add("transformer.h.0.attn.c_proj.weight", {kWidth, kWidth});
  add("transformer.h.0.attn.c_proj.bias", {kWidth});
  add("transformer.h.0.ln_2.weight", {kWidth});
  add("transformer.h.0.ln_2.bias", {kWidth});
  add("transformer.h.0.mlp.c_fc.weight", {kWidth, kFfn});
  add("transformer.h.0.mlp.c_fc.bias", {kFfn});
  add("transformer.h.0.mlp.c_proj.weight", {kFfn, kWidth});
  add("transformer.h.0.mlp.c_proj.bias", {kWidth});
  add("transformer.ln_f.weight", {kWidth});
  add("transformer.ln_f.bias", {kWidth});
  return d;
}

HfImportResult import(const fs::path& source, const fs::path& out,
                      std::vector<std::string> overrides = {}) {
  return import_hf({source, out, std::move(overrides)});
}

TEST(HfImport, Gpt2WeightsLandTransposedAndSplitWhereRotaComputesWithThem) {
  TempDir tmp;
  const Gpt2Dir d = gpt2();
  d.write(tmp / "gpt2");
  const HfImportResult r = import(tmp / "gpt2", tmp / "run");
  EXPECT_EQ(r.architecture, "GPT2LMHeadModel");
  EXPECT_EQ(r.tensors_read, 16);
  CheckpointTask loaded = load_checkpoint_task((tmp / "run").string());
  const StateDict w = loaded.task->model().state_dict();
  // Rota's q_proj.weight [out, in] is columns 0..E of Conv1D's [in, 3E]: q[o][i] = W[i][o].
  const std::vector<double> c_attn = d.at("transformer.h.0.attn.c_attn.weight").to_double_vector();
  const char* names[3] = {"q_proj", "k_proj", "v_proj"};
  for (int64_t part = 0; part < 3; ++part) {
    const std::vector<double> got =
        w.at(std::string("encoder.blocks.0.attn.") + names[part] + ".weight").to_double_vector();
    for (int64_t o = 0; o < kWidth; ++o)
      for (int64_t i = 0; i < kWidth; ++i)
        ASSERT_EQ(got[o * kWidth + i], c_attn[i * 3 * kWidth + part * kWidth + o]) << names[part];
    const std::vector<double> bias = d.at("transformer.h.0.attn.c_attn.bias").to_double_vector();
    const std::vector<double> got_bias =
        w.at(std::string("encoder.blocks.0.attn.") + names[part] + ".bias").to_double_vector();
    for (int64_t o = 0; o < kWidth; ++o) EXPECT_EQ(got_bias[o], bias[part * kWidth + o]);
  }
  const std::vector<double> fc = d.at("transformer.h.0.mlp.c_fc.weight").to_double_vector();
  const std::vector<double> fc1 = w.at("encoder.blocks.0.ffn.fc1.weight").to_double_vector();
  for (int64_t o = 0; o < kFfn; ++o)
    for (int64_t i = 0; i < kWidth; ++i) ASSERT_EQ(fc1[o * kWidth + i], fc[i * kFfn + o]);
  EXPECT_EQ(w.at("encoder.embed.weight").to_double_vector(),
            d.at("transformer.wte.weight").to_double_vector());
  EXPECT_EQ(w.at("encoder.pos_embed.weight").to_double_vector(),
            d.at("transformer.wpe.weight").to_double_vector());
  EXPECT_EQ(w.at("encoder.final_norm.bias").to_double_vector(),
            d.at("transformer.ln_f.bias").to_double_vector());
  // The recipe says what GPT-2 computes.
  const recipes::Model& m = loaded.task->recipe().model();
  EXPECT_EQ(m.ffn_activation(), recipes::Model::GELU_TANH);
  EXPECT_TRUE(m.attention().has_softmax());
  EXPECT_EQ(m.position().learned_absolute().max_positions(), kPositions);
  EXPECT_TRUE(m.tie_embeddings());
  EXPECT_EQ(loaded.task->recipe().data().sequence_length(), kPositions);
  EXPECT_TRUE(fs::exists(tmp / "run" / "recipe.txtpb"));
  EXPECT_TRUE(fs::exists(tmp / "run" / "tokenizer"));
}

TEST(HfImport, LlamaFamilyConfigsBecomeTheirRecipes) {
  TempDir tmp;
  const int64_t heads = 4, kv = 2, d = kWidth / heads;
  json config = {{"architectures", {"Qwen2ForCausalLM"}},
                 {"model_type", "qwen2"},
                 {"vocab_size", tokenizer_size() + 5},  // padded rows: model.vocab_size
                 {"hidden_size", kWidth},
                 {"intermediate_size", kFfn},
                 {"num_hidden_layers", 1},
                 {"num_attention_heads", heads},
                 {"num_key_value_heads", kv},
                 {"hidden_act", "silu"},
                 {"max_position_embeddings", 64},
                 {"rms_norm_eps", 1e-6},
                 {"tie_word_embeddings", true},
                 {"use_sliding_window", false},
                 {"sliding_window", 32768},  // ignored without use_sliding_window
                 {"max_window_layers", 28},
                 {"rope_parameters",
                  {{"rope_type", "llama3"},
                   {"rope_theta", 5e5},
                   {"factor", 8.0},
                   {"low_freq_factor", 1.0},
                   {"high_freq_factor", 4.0},
                   {"original_max_position_embeddings", 32}}}};
  Generator gen(3);
  io::NamedTensors t;
  const int64_t v = tokenizer_size() + 5;
  t.emplace_back("model.embed_tokens.weight", randn({v, kWidth}, gen));
  t.emplace_back("model.norm.weight", randn({kWidth}, gen));
  const std::string l = "model.layers.0.";
  t.emplace_back(l + "input_layernorm.weight", randn({kWidth}, gen));
  t.emplace_back(l + "post_attention_layernorm.weight", randn({kWidth}, gen));
  t.emplace_back(l + "self_attn.q_proj.weight", randn({kWidth, kWidth}, gen));
  t.emplace_back(l + "self_attn.q_proj.bias", randn({kWidth}, gen));
  t.emplace_back(l + "self_attn.k_proj.weight", randn({kv * d, kWidth}, gen));
  t.emplace_back(l + "self_attn.k_proj.bias", randn({kv * d}, gen));
  t.emplace_back(l + "self_attn.v_proj.weight", randn({kv * d, kWidth}, gen));
  t.emplace_back(l + "self_attn.v_proj.bias", randn({kv * d}, gen));
  t.emplace_back(l + "self_attn.o_proj.weight", randn({kWidth, kWidth}, gen));
  t.emplace_back(l + "mlp.gate_proj.weight", randn({kFfn, kWidth}, gen));
  t.emplace_back(l + "mlp.up_proj.weight", randn({kFfn, kWidth}, gen));
  t.emplace_back(l + "mlp.down_proj.weight", randn({kWidth, kFfn}, gen));
  // Two shards and their index.
  fs::create_directories(tmp / "qwen");
  write_file_atomically(tmp / "qwen" / "config.json", config.dump());
  io::NamedTensors first(t.begin(), t.begin() + 5), second(t.begin() + 5, t.end());
  io::save_safetensors(tmp / "qwen" / "model-1.safetensors", first);
  io::save_safetensors(tmp / "qwen" / "model-2.safetensors", second);
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  for (const auto& [name, unused] : first) index["weight_map"][name] = "model-1.safetensors";
  for (const auto& [name, unused] : second) index["weight_map"][name] = "model-2.safetensors";
  write_file_atomically(tmp / "qwen" / "model.safetensors.index.json", index.dump());
  fs::copy_file(tokenizer_file(), tmp / "qwen" / "tokenizer.json");
  import(tmp / "qwen", tmp / "run");
  CheckpointTask loaded = load_checkpoint_task((tmp / "run").string());
  const recipes::Model& m = loaded.task->recipe().model();
  EXPECT_EQ(m.kv_heads(), kv);
  EXPECT_EQ(m.vocab_size(), v);
  EXPECT_FALSE(m.bias());
  EXPECT_TRUE(m.biases().qkv());
  EXPECT_FALSE(m.biases().attention_out());
  EXPECT_EQ(m.norm_kind(), recipes::Model::RMS_NORM);
  EXPECT_EQ(m.ffn_activation(), recipes::Model::SWIGLU);
  EXPECT_EQ(m.position().rope().pairing(), recipes::HALF);
  EXPECT_EQ(m.position().rope().base(), 5e5);
  EXPECT_EQ(m.position().rope().scaling().llama3().original_max_positions(), 32);
  EXPECT_FALSE(m.attention().softmax().has_window());
  const StateDict w = loaded.task->model().state_dict();
  EXPECT_EQ(w.at("encoder.blocks.0.attn.k_proj.bias").to_double_vector(),
            t[7].second.to_double_vector());
  EXPECT_EQ(w.at("encoder.embed.weight").size(0), v);
}

TEST(HfImport, RefusalsNameTheProblemAndLeaveTheOutDirectoryAsItWas) {
  TempDir tmp;
  auto refused = [&](const std::string& name, const std::function<void(Gpt2Dir&)>& change,
                     std::vector<std::string> fragments) {
    Gpt2Dir d = gpt2();
    change(d);
    d.write(tmp / name);
    expect_error([&] { import(tmp / name, tmp / ("out-" + name)); }, fragments);
    EXPECT_FALSE(fs::exists(tmp / ("out-" + name))) << name;  // nothing left behind
  };
  refused("arch", [](Gpt2Dir& d) { d.config["architectures"] = {"BertModel"}; },
          {"architecture 'BertModel'", "is not one Rota imports"});
  refused("field", [](Gpt2Dir& d) { d.config["attention_sink_tokens"] = 4; },
          {"attention_sink_tokens", "not ones the importer knows"});
  refused("layer_scale", [](Gpt2Dir& d) { d.config["scale_attn_by_inverse_layer_idx"] = true; },
          {"scale_attn_by_inverse_layer_idx"});
  refused("activation", [](Gpt2Dir& d) { d.config["activation_function"] = "quick_gelu"; },
          {"activation 'quick_gelu'"});
  refused("vocab", [](Gpt2Dir& d) { d.config["vocab_size"] = 10; },
          {"vocab_size 10 is less than tokenizer.json's"});
  refused("missing", [](Gpt2Dir& d) { d.tensors.pop_back(); },
          {"has no tensor 'transformer.ln_f.bias'", "encoder.final_norm.bias"});
  refused("extra",
          [](Gpt2Dir& d) { d.tensors.emplace_back("transformer.h.0.adapter", zeros({2})); },
          {"holds tensor 'transformer.h.0.adapter'"});
  refused("shape",
          [](Gpt2Dir& d) {
            d.tensors[4].second = zeros({kWidth, 2 * kWidth});
          },
          {"transformer.h.0.attn.c_attn.weight", "[8,16]", "the config and the weights disagree"});
  refused("ints", [](Gpt2Dir& d) { d.tensors[2].second = zeros({kWidth}, DType::kI64); },
          {"transformer.h.0.ln_1.weight", "I64"});
  {  // Values the recipe refuses: a recipe error (exit code 2 at the CLI), nothing left behind.
    Gpt2Dir d = gpt2();
    d.config["n_embd"] = -8;
    d.write(tmp / "negative");
    try {
      import(tmp / "negative", tmp / "out-negative");
      ADD_FAILURE() << "n_embd -8 imported";
    } catch (const recipes::RecipeError& e) {
      EXPECT_NE(std::string(e.what()).find("model.width: must be >= 1 (got -8)"), std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(tmp / "out-negative"));
  }
  refused("text", [](Gpt2Dir& d) { d.config["n_layer"] = "two"; },
          {"'n_layer' must be an integer"});
  // A refused import into an empty directory leaves it empty, so the retry can use it.
  Gpt2Dir d = gpt2();
  d.tensors.pop_back();
  d.write(tmp / "retry");
  fs::create_directories(tmp / "empty");
  expect_error([&] { import(tmp / "retry", tmp / "empty"); }, {"has no tensor"});
  EXPECT_TRUE(fs::is_empty(tmp / "empty"));
  gpt2().write(tmp / "retry");
  import(tmp / "retry", tmp / "empty");
  EXPECT_TRUE(fs::exists(tmp / "empty" / "checkpoints"));
  // And a run is never written over.
  expect_error([&] { import(tmp / "retry", tmp / "empty"); }, {"is not an empty directory"});
  write_file_atomically(tmp / "retry" / "config.json", "{\"architectures\": [");
  expect_error([&] { import(tmp / "retry", tmp / "out-json"); }, {"is not valid JSON"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
