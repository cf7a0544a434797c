// `rota import hf`: config.json → a recipe, safetensors → the model's weights, one tensor at a
// time.
#include "app/run/hf_import.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "app/run/exit_codes.h"
#include "app/setup/tokenizer_setup.h"
#include "app/tasks/task.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/base/directory_lock.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint.h"
#include "framework/io/safetensors_file.h"
#include "recipes/loader.h"

namespace rota::app {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// ---- config.json --------------------------------------------------------------------------

/// config.json with every field the import reads marked, so that the ones left can be refused.
class Config {
 public:
  explicit Config(const fs::path& file) : file_(file.string()) {
    const std::string text = read_file(file);
    try {
      json_ = json::parse(text);
    } catch (const json::exception& e) {
      fail("import hf: {} is not valid JSON: {}", file_, library_detail(e));
    }
    if (!json_.is_object()) fail("import hf: {} does not hold a JSON object", file_);
  }

  bool has(const std::string& key) const { return json_.contains(key) && !json_[key].is_null(); }
  /// The key is there, null or not.
  bool present(const std::string& key) const { return json_.contains(key); }
  /// Marks `key` read, whatever its value.
  void consume(const std::string& key) { used_.insert(key); }
  const json& raw(const std::string& key) {
    consume(key);
    return json_[key];
  }

  int64_t integer(const std::string& key) {
    consume(key);
    if (!has(key)) fail("import hf: {} has no '{}'", file_, key);
    const json& v = json_[key];
    if (!v.is_number_integer())
      fail("import hf: {}: '{}' must be an integer, got {}", file_, key, v.dump());
    return v.get<int64_t>();
  }
  int64_t integer(const std::string& key, int64_t fallback) {
    return has(key) ? integer(key) : (consume(key), fallback);
  }
  double number(const std::string& key, double fallback) {
    consume(key);
    if (!has(key)) return fallback;
    const json& v = json_[key];
    if (!v.is_number()) fail("import hf: {}: '{}' must be a number, got {}", file_, key, v.dump());
    return v.get<double>();
  }
  bool boolean(const std::string& key, bool fallback) {
    consume(key);
    if (!has(key)) return fallback;
    const json& v = json_[key];
    if (!v.is_boolean())
      fail("import hf: {}: '{}' must be true or false, got {}", file_, key, v.dump());
    return v.get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback) {
    consume(key);
    if (!has(key)) return fallback;
    const json& v = json_[key];
    if (!v.is_string()) fail("import hf: {}: '{}' must be a string, got {}", file_, key, v.dump());
    return v.get<std::string>();
  }

  /// Refuses every field neither read nor in `harmless` (bookkeeping, token ids, generation
  /// defaults: nothing that changes what the network computes).
  void refuse_unknown(const std::set<std::string>& harmless,
                      const std::string& architecture) const {
    std::vector<std::string> unknown;
    for (const auto& [key, value] : json_.items()) {
      if (used_.count(key) == 0 && harmless.count(key) == 0) unknown.push_back(key);
    }
    if (!unknown.empty()) {
      fail(
          "import hf: {}: field(s) {} of {} are not ones the importer knows; it cannot tell "
          "whether they change what the model computes, so it stops rather than import a "
          "model that might compute something else",
          file_, fmt::join(unknown, ", "), architecture);
    }
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  json json_;
  std::set<std::string> used_;
};

/// Fields every transformers config may carry that do not change the network's computation.
const std::set<std::string>& harmless_fields() {
  static const std::set<std::string> fields = {"_name_or_path",
                                               "architectures",
                                               "model_type",
                                               "transformers_version",
                                               "torch_dtype",
                                               "dtype",
                                               "bos_token_id",
                                               "eos_token_id",
                                               "pad_token_id",
                                               "sep_token_id",
                                               "decoder_start_token_id",
                                               "use_cache",
                                               "initializer_range",
                                               "return_dict",
                                               "output_hidden_states",
                                               "output_attentions",
                                               "torchscript",
                                               "use_bfloat16",
                                               "id2label",
                                               "label2id",
                                               "problem_type",
                                               "tokenizer_class",
                                               "prefix",
                                               "finetuning_task",
                                               "task_specific_params",
                                               "chunk_size_feed_forward",
                                               "tie_encoder_decoder",
                                               "cross_attention_hidden_size",
                                               "tf_legacy_loss",
                                               "max_length",
                                               "min_length",
                                               "do_sample",
                                               "early_stopping",
                                               "num_beams",
                                               "num_beam_groups",
                                               "diversity_penalty",
                                               "temperature",
                                               "top_k",
                                               "top_p",
                                               "typical_p",
                                               "repetition_penalty",
                                               "length_penalty",
                                               "no_repeat_ngram_size",
                                               "encoder_no_repeat_ngram_size",
                                               "bad_words_ids",
                                               "num_return_sequences",
                                               "output_scores",
                                               "return_dict_in_generate",
                                               "forced_bos_token_id",
                                               "forced_eos_token_id",
                                               "remove_invalid_values",
                                               "exponential_decay_length_penalty",
                                               "suppress_tokens",
                                               "begin_suppress_tokens",
                                               "pretraining_tp"};
  return fields;
}

void require(bool ok, const Config& config, const std::string& what) {
  if (!ok) fail("import hf: {}: {}", config.file(), what);
}

// ---- the recipe ---------------------------------------------------------------------------

/// What config.json says, in the recipe's terms, plus how the source's tensors map onto it.
struct Translation {
  std::string model_text;  // the body of `model { ... }`
  int64_t vocab_size = 0;
  int64_t sequence_length = 0;
  bool tied = true;
  bool gpt2 = false;
  int64_t layers = 0;
  std::vector<std::string> warnings;
};

std::string number_text(double v) {
  return fmt::format("{}", v);
}

std::string ffn_activation_of(const std::string& act, const Config& config, bool gated) {
  if (gated) {
    if (act == "silu" || act == "swish") return "SWIGLU";
    if (act == "gelu") return "GEGLU";
  } else {
    if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_python_tanh" ||
        act == "gelu_fast") {
      return "GELU_TANH";
    }
    if (act == "gelu") return "GELU";
    if (act == "relu") return "RELU";
    if (act == "silu" || act == "swish") return "SILU";
  }
  fail("import hf: {}: activation '{}' is not one Rota computes for this architecture ({})",
       config.file(), act,
       gated ? "gated: silu, gelu"
             : "gelu_new, gelu_pytorch_tanh, gelu_python_tanh, gelu_fast, gelu, relu, silu");
}

Translation translate_gpt2(Config& c) {
  Translation t;
  t.gpt2 = true;
  const int64_t e = c.integer("n_embd"), layers = c.integer("n_layer"), heads = c.integer("n_head");
  const int64_t positions = c.integer("n_positions");
  c.consume("n_ctx");  // a duplicate of n_positions in old configs
  t.vocab_size = c.integer("vocab_size");
  t.layers = layers;
  const int64_t inner = c.integer("n_inner", 4 * e);
  const std::string act = ffn_activation_of(c.text("activation_function", "gelu_new"), c, false);
  require(!c.boolean("scale_attn_by_inverse_layer_idx", false), c,
          "scale_attn_by_inverse_layer_idx: true (a per-layer attention scale) is not supported");
  require(!c.boolean("add_cross_attention", false), c,
          "add_cross_attention: true (an encoder-decoder GPT-2) is not supported");
  c.boolean("reorder_and_upcast_attn", false);  // float32 here anyway: the same numbers
  const bool scaled = c.boolean("scale_attn_weights", true);
  for (const char* key : {"summary_type", "summary_use_proj", "summary_activation",
                          "summary_proj_to_labels", "summary_first_dropout"}) {
    c.consume(key);  // GPT2DoubleHeadsModel's classification head, not part of the LM
  }
  const double resid = c.number("resid_pdrop", 0.1), embd = c.number("embd_pdrop", 0.1);
  const double attn = c.number("attn_pdrop", 0.1);
  if (embd != resid) {
    t.warnings.push_back(fmt::format(
        "embd_pdrop {} differs from resid_pdrop {}: Rota has one dropout for the embeddings and "
        "the residual branches (model.dropout = {}); only fine-tuning sees it",
        embd, resid, resid));
  }
  t.tied = c.boolean("tie_word_embeddings", true);
  t.sequence_length = std::min<int64_t>(positions, 1024);
  t.model_text = fmt::format(
      "kind: CAUSAL_LM width: {} layers: {} heads: {} ffn_width: {} ffn_activation: {} "
      "norm_kind: LAYER_NORM bias: true norm_placement: PRE_NORM final_norm: true norm_eps: {} "
      "dropout: {} embedding_scale: UNSCALED tie_embeddings: {} "
      "attention {{ softmax {{ dropout: {}{} }} }} "
      "position {{ learned_absolute {{ max_positions: {} }} }}",
      e, layers, heads, inner, act, number_text(c.number("layer_norm_epsilon", 1e-5)),
      number_text(resid), t.tied ? "true" : "false", number_text(attn), scaled ? "" : " scale: 1",
      positions);
  return t;
}

/// The RoPE settings of a Llama-family config, read as transformers 5 reads them: the dict is
/// rope_scaling when set (transformers 4's configs), else rope_parameters (transformers 5's);
/// θ is the dict's rope_theta, else rope_parameters' rope_theta, else the top-level rope_theta,
/// else 10000. Llama 3's rule without original_max_position_embeddings uses
/// max_position_embeddings.
std::string rope_text(Config& c, int64_t max_positions) {
  double theta = c.number("rope_theta", 10000.0);
  const json& parameters = c.raw("rope_parameters");
  const json& legacy = c.raw("rope_scaling");
  for (const auto& [key, v] : {std::pair<const char*, const json*>{"rope_parameters", &parameters},
                               {"rope_scaling", &legacy}}) {
    require(v->is_null() || v->is_object(), c, fmt::format("'{}' must be an object or null", key));
  }
  if (parameters.is_object() && parameters.contains("rope_theta") &&
      parameters["rope_theta"].is_number()) {
    theta = parameters["rope_theta"].get<double>();
  }
  const json* params = legacy.is_object()       ? &legacy
                       : parameters.is_object() ? &parameters
                                                : nullptr;
  const std::string where = legacy.is_object() ? "rope_scaling" : "rope_parameters";
  std::string scaling;
  if (params != nullptr) {
    std::string type = "default";
    std::map<std::string, double> numbers;
    for (const auto& [key, value] : params->items()) {
      if (key == "rope_type" || key == "type") {
        require(value.is_string(), c, fmt::format("{}.{} must be a string", where, key));
        type = value.get<std::string>();
      } else if (value.is_number()) {
        numbers[key] = value.get<double>();
      } else if (!value.is_null()) {
        fail("import hf: {}: {}.{} = {} is not a setting the importer knows", c.file(), where, key,
             value.dump());
      }
    }
    auto take = [&](const std::string& key) -> std::optional<double> {
      const auto it = numbers.find(key);
      if (it == numbers.end()) return std::nullopt;
      const double v = it->second;
      numbers.erase(it);
      return v;
    };
    if (const auto t = take("rope_theta")) theta = *t;
    if (type == "default") {
      // nothing more
    } else if (type == "linear") {
      const auto factor = take("factor");
      require(factor.has_value(), c, where + " of rope_type linear needs a factor");
      scaling = fmt::format(" scaling {{ linear {{ factor: {} }} }}", number_text(*factor));
    } else if (type == "llama3") {
      const auto factor = take("factor"), low = take("low_freq_factor"),
                 high = take("high_freq_factor"),
                 original = take("original_max_position_embeddings");
      require(factor && low && high && original, c,
              where +
                  " of rope_type llama3 needs factor, low_freq_factor, high_freq_factor and "
                  "original_max_position_embeddings");
      scaling = fmt::format(
          " scaling {{ llama3 {{ factor: {} low_freq_factor: {} high_freq_factor: {} "
          "original_max_positions: {} }} }}",
          number_text(*factor), number_text(*low), number_text(*high),
          original ? static_cast<int64_t>(*original) : max_positions);
    } else {
      fail(
          "import hf: {}: {} rope_type '{}' is not supported (Rota computes default, linear and "
          "llama3)",
          c.file(), where, type);
    }
    // Settings some rope types carry that change nothing at their neutral values.
    if (const auto partial = take("partial_rotary_factor")) {
      require(*partial == 1.0, c,
              fmt::format("{}.partial_rotary_factor {} (RoPE on part of "
                          "each head) is not supported",
                          where, *partial));
    }
    if (!numbers.empty()) {
      fail("import hf: {}: {}.{} is not a setting rope_type '{}' has in Rota's importer", c.file(),
           where, numbers.begin()->first, type);
    }
  }
  return fmt::format("position {{ rope {{ pairing: HALF base: {}{} }} }}", number_text(theta),
                     scaling);
}

Translation translate_llama(Config& c, const std::string& architecture) {
  Translation t;
  const bool qwen2 = architecture == "Qwen2ForCausalLM";
  const bool mistral = architecture == "MistralForCausalLM";
  const int64_t e = c.integer("hidden_size"), layers = c.integer("num_hidden_layers");
  const int64_t heads = c.integer("num_attention_heads");
  const int64_t kv_heads = c.integer("num_key_value_heads", heads);
  t.vocab_size = c.integer("vocab_size");
  t.layers = layers;
  require(heads > 0 && e % heads == 0, c,
          fmt::format("hidden_size {} is not a multiple of num_attention_heads {}", e, heads));
  if (c.has("head_dim")) {
    const int64_t head_dim = c.integer("head_dim");
    require(head_dim == e / heads, c,
            fmt::format("head_dim {} differs from hidden_size / num_attention_heads = {}; Rota's "
                        "heads are width / heads wide",
                        head_dim, e / heads));
  } else {
    c.consume("head_dim");
  }
  const std::string act = ffn_activation_of(c.text("hidden_act", "silu"), c, true);
  const int64_t positions = c.integer("max_position_embeddings", 2048);
  // Biases: Llama's attention_bias (q, k, v and o) and mlp_bias; Qwen2 has q, k, v biases only.
  bool qkv = false, out = false, ffn = false;
  if (qwen2) {
    qkv = true;
  } else if (!mistral) {
    qkv = out = c.boolean("attention_bias", false);
    ffn = c.boolean("mlp_bias", false);
  }
  // Sliding windows: Mistral's sliding_window for every layer; Qwen2's only with
  // use_sliding_window (and then from max_window_layers on, which Rota does not split).
  int64_t window = 0;
  if (mistral) {
    // null: no window; absent: MistralConfig's default, 4096.
    window = c.present("sliding_window") ? c.integer("sliding_window", 0)
                                         : (c.consume("sliding_window"), 4096);
  } else if (qwen2) {
    const bool sliding = c.boolean("use_sliding_window", false);
    c.consume("sliding_window");
    c.consume("max_window_layers");
    require(!sliding, c,
            "use_sliding_window: true (sliding windows from max_window_layers on) is not "
            "supported");
  }
  if (c.has("layer_types")) {
    const json& types = c.raw("layer_types");
    require(types.is_array(), c, "layer_types must be a list");
    for (const json& type : types) {
      const bool full = type.is_string() && type.get<std::string>() == "full_attention";
      const bool sliding = type.is_string() && type.get<std::string>() == "sliding_attention";
      require(full || (sliding && window > 0), c,
              fmt::format("layer_types holds {}; Rota imports full_attention layers (and "
                          "Mistral's sliding_attention with its sliding_window)",
                          type.dump()));
    }
  } else {
    c.consume("layer_types");
  }
  const double attention_dropout = c.number("attention_dropout", 0.0);
  t.tied = c.boolean("tie_word_embeddings", false);  // the default of all three configs
  t.sequence_length = std::min<int64_t>(positions, 2048);
  const std::string rope = rope_text(c, positions);
  t.model_text = fmt::format(
      "kind: CAUSAL_LM width: {} layers: {} heads: {} kv_heads: {} ffn_width: {} "
      "ffn_activation: {} norm_kind: RMS_NORM bias: false biases {{ qkv: {} attention_out: {} "
      "ffn: {} norms: false }} norm_placement: PRE_NORM final_norm: true norm_eps: {} dropout: 0 "
      "embedding_scale: UNSCALED tie_embeddings: {} "
      "attention {{ softmax {{ dropout: {}{} }} }} {}",
      e, layers, heads, kv_heads, c.integer("intermediate_size"), act, qkv, out, ffn,
      number_text(c.number("rms_norm_eps", 1e-6)), t.tied ? "true" : "false",
      number_text(attention_dropout), window > 0 ? fmt::format(" window: {}", window) : "", rope);
  return t;
}

std::string run_name_of(const fs::path& source) {
  std::string base = fs::absolute(source).lexically_normal().filename().string();
  if (base.empty())
    base = fs::absolute(source).lexically_normal().parent_path().filename().string();
  std::string name;
  for (char ch : base) {
    const bool keep = std::isalnum(static_cast<unsigned char>(ch)) != 0;
    name += keep ? static_cast<char>(std::tolower(static_cast<unsigned char>(ch))) : '-';
  }
  return "hf-" + (name.empty() ? std::string("model") : name);
}

std::string recipe_text_of(const Translation& t, const std::string& architecture,
                           const fs::path& source) {
  const std::string dir = fs::absolute(source).lexically_normal().string();
  return fmt::format(
      "version: 1\n"
      "name: {}\n"
      "description: {}\n"
      "model {{ {} }}\n"
      "data {{ corpus: \"wikitext-2\" tokenizer {{ path: {} }} sequence_length: {} batch_size: 8 "
      "}}\n"
      "train {{ steps: 1 }}\n",
      json(run_name_of(source)).dump(),
      json(fmt::format("{} imported from {}", architecture, dir)).dump(), t.model_text,
      json(dir).dump(), t.sequence_length);
}

// ---- the weights --------------------------------------------------------------------------

/// Where a source tensor goes: into Rota's tensor `rota`, as stored or transposed (GPT-2's
/// Conv1D keeps [in, out]), rows [row_begin, row_begin + rows) of that (GPT-2's fused c_attn).
struct Target {
  std::string rota;
  bool transpose = false;
  int64_t row_begin = 0;
  int64_t rows = -1;  // -1: all
};

/// Rota's tensor `t.rota` must be rows [t.row_begin, +rows) of a source tensor of `shape` (or of
/// its transpose): refuses, naming both, when the shapes say otherwise.
void check_shapes(const Shape& shape, const Target& t, const Tensor& dst,
                  const std::string& source_name) {
  const bool matrix = shape.size() == 2;
  if (shape.size() != 1 && !matrix) {
    fail("import hf: tensor '{}' is {}: 1-D or 2-D expected", source_name, shape_str(shape));
  }
  const int64_t src_rows = matrix && t.transpose ? shape[1] : shape[0];
  const int64_t cols = matrix ? (t.transpose ? shape[0] : shape[1]) : 1;
  const int64_t rows = t.rows < 0 ? src_rows : t.rows;
  const Shape want = matrix ? Shape{rows, cols} : Shape{rows};
  if (t.row_begin + rows > src_rows || dst.shape() != want || dst.dtype() != DType::kF32 ||
      !dst.is_contiguous()) {
    fail(
        "import hf: tensor '{}' is {}{}; Rota's '{}' is {} (the config and the weights "
        "disagree)",
        source_name, shape_str(shape),
        t.rows >= 0 ? fmt::format(" (rows {}..{} of it wanted)", t.row_begin, t.row_begin + rows)
                    : "",
        t.rota, shape_str(dst.shape()));
  }
}

/// Copies rows [t.row_begin, +rows) of src (or of srcᵀ), a row-major `shape`, into dst (shapes
/// checked by check_shapes).
void place(const float* in, const Shape& shape, const Target& t, Tensor& dst) {
  const bool matrix = shape.size() == 2;
  const int64_t src_rows = matrix && t.transpose ? shape[1] : shape[0];
  const int64_t cols = matrix ? (t.transpose ? shape[0] : shape[1]) : 1;
  const int64_t rows = t.rows < 0 ? src_rows : t.rows;
  float* out = dst.data<float>();
  if (!matrix) {
    std::memcpy(out, in + t.row_begin, sizeof(float) * rows);
    return;
  }
  if (!t.transpose) {
    std::memcpy(out, in + t.row_begin * cols, sizeof(float) * rows * cols);
    return;
  }
  // srcᵀ row r is src column r: out[r, c] = src[c, row_begin + r] (src [cols, src_rows]).
  for (int64_t c = 0; c < cols; ++c) {
    const float* src_row = in + c * src_rows + t.row_begin;
    for (int64_t r = 0; r < rows; ++r) out[r * cols + c] = src_row[r];
  }
}

/// The source tensor names of a Rota block parameter: (source name → targets).
using Plan = std::map<std::string, std::vector<Target>>;

Plan gpt2_plan(int64_t layers, int64_t width, const std::string& prefix) {
  Plan plan;
  auto add = [&](const std::string& source, Target t) { plan[prefix + source].push_back(t); };
  add("wte.weight", {"encoder.embed.weight"});
  add("wpe.weight", {"encoder.pos_embed.weight"});
  add("ln_f.weight", {"encoder.final_norm.weight"});
  add("ln_f.bias", {"encoder.final_norm.bias"});
  plan["lm_head.weight"].push_back({"lm_head.weight"});  // GPT2LMHeadModel's, never prefixed
  for (int64_t i = 0; i < layers; ++i) {
    const std::string h = fmt::format("h.{}.", i), b = fmt::format("encoder.blocks.{}.", i);
    for (const char* part : {"weight", "bias"}) {
      const std::string p = part;
      add(h + "ln_1." + p, {b + "ln1." + p});
      add(h + "ln_2." + p, {b + "ln2." + p});
      const bool w = p == "weight";
      const char* names[3] = {"q_proj", "k_proj", "v_proj"};
      for (int64_t k = 0; k < 3; ++k) {
        add(h + "attn.c_attn." + p, {b + "attn." + names[k] + "." + p, w, k * width, width});
      }
      add(h + "attn.c_proj." + p, {b + "attn.out_proj." + p, w});
      add(h + "mlp.c_fc." + p, {b + "ffn.fc1." + p, w});
      add(h + "mlp.c_proj." + p, {b + "ffn.fc2." + p, w});
    }
  }
  return plan;
}

Plan llama_plan(int64_t layers) {
  Plan plan;
  auto add = [&](const std::string& source, const std::string& rota) {
    plan[source].push_back({rota});
  };
  add("model.embed_tokens.weight", "encoder.embed.weight");
  add("model.norm.weight", "encoder.final_norm.weight");
  add("lm_head.weight", "lm_head.weight");
  for (int64_t i = 0; i < layers; ++i) {
    const std::string h = fmt::format("model.layers.{}.", i),
                      b = fmt::format("encoder.blocks.{}.", i);
    add(h + "input_layernorm.weight", b + "ln1.weight");
    add(h + "post_attention_layernorm.weight", b + "ln2.weight");
    for (const char* part : {"weight", "bias"}) {
      const std::string p = part;
      add(h + "self_attn.q_proj." + p, b + "attn.q_proj." + p);
      add(h + "self_attn.k_proj." + p, b + "attn.k_proj." + p);
      add(h + "self_attn.v_proj." + p, b + "attn.v_proj." + p);
      add(h + "self_attn.o_proj." + p, b + "attn.out_proj." + p);
      add(h + "mlp.gate_proj." + p, b + "ffn.gate_proj." + p);
      add(h + "mlp.up_proj." + p, b + "ffn.up_proj." + p);
      add(h + "mlp.down_proj." + p, b + "ffn.down_proj." + p);
    }
  }
  return plan;
}

/// Buffers older checkpoints saved that are not weights: GPT-2's causal masks, Llama's inverse
/// frequencies (Rota computes θ from the config).
bool is_ignored_buffer(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".attn.bias") || ends_with(".attn.masked_bias") ||
         ends_with(".rotary_emb.inv_freq");
}

/// The source's safetensors files: model.safetensors, or the shards an index names.
std::vector<std::unique_ptr<io::SafetensorsFile>> open_weights(const fs::path& source) {
  std::vector<std::unique_ptr<io::SafetensorsFile>> files;
  const fs::path single = source / "model.safetensors";
  const fs::path index = source / "model.safetensors.index.json";
  if (fs::exists(index)) {
    json parsed;
    try {
      parsed = json::parse(read_file(index));
    } catch (const json::exception& e) {
      fail("import hf: {} is not valid JSON: {}", index.string(), library_detail(e));
    }
    if (!parsed.is_object() || !parsed.contains("weight_map") ||
        !parsed["weight_map"].is_object()) {
      fail("import hf: {} has no weight_map object", index.string());
    }
    std::map<std::string, std::set<std::string>> names_by_file;
    for (const auto& [name, file] : parsed["weight_map"].items()) {
      if (!file.is_string())
        fail("import hf: {}: weight_map[{}] is not a file name", index.string(), name);
      const std::string shard = file.get<std::string>();
      if (shard.find('/') != std::string::npos || shard == ".." || shard.empty()) {
        fail("import hf: {}: weight_map[{}] = '{}' is not a file in this directory", index.string(),
             name, shard);
      }
      names_by_file[shard].insert(name);
    }
    for (const auto& [shard, names] : names_by_file) {
      files.push_back(std::make_unique<io::SafetensorsFile>(source / shard));
      std::set<std::string> held;
      for (const io::SafetensorsEntry& e : files.back()->entries()) held.insert(e.name);
      for (const std::string& name : names) {
        if (held.count(name) == 0) {
          fail("import hf: {} places '{}' in {}, which does not hold it", index.string(), name,
               shard);
        }
      }
      for (const std::string& name : held) {
        if (names.count(name) == 0) {
          fail("import hf: {} holds '{}', which {} does not list", shard, name, index.string());
        }
      }
    }
  } else if (fs::exists(single)) {
    files.push_back(std::make_unique<io::SafetensorsFile>(single));
  } else {
    fail(
        "import hf: {} has neither model.safetensors nor model.safetensors.index.json (PyTorch "
        ".bin checkpoints are not read: save the model with safe_serialization=True)",
        source.string());
  }
  return files;
}

}  // namespace

namespace {
/// The part of import_hf that writes into `out` (created, empty): recipe, model, weights,
/// checkpoint.
void write_run(const HfImportRequest& request, Translation& t, HfImportResult& result,
               const fs::path& out);
}  // namespace

HfImportResult import_hf(const HfImportRequest& request) {
  const fs::path source = request.source;
  if (!fs::is_directory(source)) fail("import hf: {} is not a directory", source.string());
  const fs::path config_file = source / "config.json";
  if (!fs::exists(config_file)) fail("import hf: {} has no config.json", source.string());
  if (!fs::exists(source / "tokenizer.json")) {
    fail(
        "import hf: {} has no tokenizer.json (Rota reads Hugging Face tokenizers in that form; "
        "a slow tokenizer's vocab.json/merges.txt or tokenizer.model can be converted by loading "
        "it with transformers' AutoTokenizer and calling save_pretrained)",
        source.string());
  }
  Config config(config_file);
  HfImportResult result;
  const json& architectures = config.raw("architectures");
  if (!architectures.is_array() || architectures.size() != 1 || !architectures[0].is_string()) {
    fail("import hf: {}: 'architectures' must name one architecture, got {}", config.file(),
         architectures.dump());
  }
  result.architecture = architectures[0].get<std::string>();
  const std::string model_type = config.text("model_type", "");
  Translation t;
  if (result.architecture == "GPT2LMHeadModel" && model_type == "gpt2") {
    t = translate_gpt2(config);
  } else if ((result.architecture == "LlamaForCausalLM" && model_type == "llama") ||
             (result.architecture == "MistralForCausalLM" && model_type == "mistral") ||
             (result.architecture == "Qwen2ForCausalLM" && model_type == "qwen2")) {
    t = translate_llama(config, result.architecture);
  } else {
    fail(
        "import hf: {}: architecture '{}' (model_type '{}') is not one Rota imports; it reads "
        "GPT2LMHeadModel (gpt2), LlamaForCausalLM (llama), MistralForCausalLM (mistral) and "
        "Qwen2ForCausalLM (qwen2)",
        config.file(), result.architecture, model_type);
  }
  config.refuse_unknown(harmless_fields(), result.architecture);
  result.warnings = t.warnings;

  // The run directory: never over an existing run, and left as it was found (absent or empty)
  // when the import is refused half way, so that a corrected retry can use it.
  const fs::path out = request.out;
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out))) {
    fail("import hf: {} exists and is not an empty directory; import into a new directory",
         out.string());
  }
  const bool existed = fs::exists(out);
  fs::create_directories(out);
  try {
    write_run(request, t, result, out);
  } catch (...) {
    std::error_code ignored;
    if (existed) {
      for (const auto& entry : fs::directory_iterator(out, ignored)) fs::remove_all(entry, ignored);
    } else {
      fs::remove_all(out, ignored);
    }
    throw;
  }
  return result;
}

namespace {

void write_run(const HfImportRequest& request, Translation& t, HfImportResult& result,
               const fs::path& out) {
  const fs::path source = request.source;
  const DirectoryLock lock(out, "wait for it to finish, or import into another --out");

  const std::string recipe_name = fmt::format("the recipe imported from {}", source.string());
  recipes::Recipe recipe = recipes::load_recipe_text(recipe_text_of(t, result.architecture, source),
                                                     recipe_name, request.overrides);
  TaskInputs inputs;
  inputs.tokenizer = obtain_tokenizer(recipe, std::nullopt, inputs.data_options);
  const int64_t tokens = inputs.tokenizer->vocab_size();
  if (t.vocab_size < tokens) {
    fail(
        "import hf: config.json's vocab_size {} is less than tokenizer.json's {} tokens: every "
        "token needs an embedding row",
        t.vocab_size, tokens);
  }
  if (t.vocab_size > tokens) {  // rows padded past the tokenizer (Qwen2): model.vocab_size
    t.model_text += fmt::format(" vocab_size: {}", t.vocab_size);
    recipe = recipes::load_recipe_text(recipe_text_of(t, result.architecture, source), recipe_name,
                                       request.overrides);
  }
  const std::string recipe_text = recipes::format_recipe(
      recipe, fmt::format("Imported by `rota import hf` from {} ({}). The model section computes "
                          "what the source computes; data is what `rota eval` reads by default; "
                          "train is a placeholder: to train from these weights, write a recipe "
                          "with finetune {{ init_from: \"RUN\" }} (docs/pretrained.md).",
                          fs::absolute(source).lexically_normal().string(), result.architecture));
  inputs.recipe = recipe;
  inputs.inference = true;
  std::unique_ptr<Task> task = make_task(std::move(inputs));
  StateDict weights = task->model().state_dict();

  const Plan plan = t.gpt2 ? Plan{} : llama_plan(t.layers);
  std::vector<std::unique_ptr<io::SafetensorsFile>> files = open_weights(source);
  // GPT-2 checkpoints name their tensors with or without GPT2LMHeadModel's "transformer.".
  Plan gpt2;
  if (t.gpt2) {
    bool prefixed = false;
    for (const auto& f : files) {
      for (const io::SafetensorsEntry& e : f->entries())
        prefixed |= e.name.rfind("transformer.", 0) == 0;
    }
    gpt2 = gpt2_plan(t.layers, weights.at("encoder.embed.weight").size(1),
                     prefixed ? "transformer." : "");
  }
  const Plan& mapping = t.gpt2 ? gpt2 : plan;
  std::set<std::string> filled;
  // A stored lm_head of a tied model must be the embedding: compared once both are known.
  std::optional<std::pair<const io::SafetensorsFile*, const io::SafetensorsEntry*>> tied_head;
  for (const auto& file : files) {
    for (const io::SafetensorsEntry& entry : file->entries()) {
      const auto it = mapping.find(entry.name);
      if (it == mapping.end()) {
        if (is_ignored_buffer(entry.name)) {
          result.ignored.push_back(entry.name);
          continue;
        }
        fail(
            "import hf: {} holds tensor '{}', which {} does not have (the config and the "
            "weights disagree, or this is another architecture)",
            file->path().string(), entry.name, result.architecture);
      }
      if (entry.name == "lm_head.weight" && t.tied) {
        tied_head.emplace(file.get(), &entry);
        continue;
      }
      const std::vector<Target>& targets = it->second;
      for (const Target& target : targets) {
        if (!weights.contains(target.rota)) {
          fail(
              "import hf: {} holds tensor '{}', but the model the config describes has no "
              "'{}' (a bias the config says is absent?)",
              file->path().string(), entry.name, target.rota);
        }
        check_shapes(entry.shape, target, weights.at(target.rota), entry.name);
        if (!filled.insert(target.rota).second) {
          fail("import hf: '{}' is written twice (duplicate tensors in the shards?)", target.rota);
        }
      }
      ++result.tensors_read;
      const Target& first = targets.front();
      if (targets.size() == 1 && !first.transpose && first.rows < 0) {
        // As stored: straight into the model's memory (no copy of the tensor held).
        Tensor dst = weights.at(first.rota);
        file->read_f32(entry,
                       std::span<float>(dst.data<float>(), static_cast<size_t>(dst.numel())));
        result.parameters += dst.numel();
        continue;
      }
      std::vector<float> value(static_cast<size_t>(shape_numel(entry.shape)));
      file->read_f32(entry, value);
      for (const Target& target : targets) {
        Tensor dst = weights.at(target.rota);
        place(value.data(), entry.shape, target, dst);
        result.parameters += dst.numel();
      }
    }
  }
  // Every weight must have come from the source; RoPE's θ is computed from the config.
  for (const auto& [name, tensor] : weights) {
    if (filled.count(name) != 0) continue;
    if (name.size() > 11 && name.compare(name.size() - 11, 11, ".rope.theta") == 0) continue;
    std::string wanted;
    for (const auto& [source_name, targets] : mapping) {
      for (const Target& target : targets) {
        if (target.rota == name) wanted = source_name;
      }
    }
    fail("import hf: the checkpoint in {} has no tensor '{}' (Rota's '{}')", source.string(),
         wanted.empty() ? std::string("?") : wanted, name);
  }
  if (tied_head) {
    const auto [file, entry] = *tied_head;
    const Tensor& embed = weights.at("encoder.embed.weight");
    bool same = entry->shape == embed.shape();
    if (same) {
      std::vector<float> head(static_cast<size_t>(embed.numel()));
      file->read_f32(*entry, head);
      ++result.tensors_read;
      same = std::memcmp(head.data(), embed.data<float>(), sizeof(float) * head.size()) == 0;
    }
    if (!same) {
      fail(
          "import hf: lm_head.weight differs from the token embedding although "
          "tie_word_embeddings is true; set tie_word_embeddings: false in config.json if the "
          "head is meant to be its own");
    }
  }

  io::Checkpoint checkpoint;
  checkpoint.model = task->model().state_dict();
  checkpoint.state.set_step(0);
  checkpoint.recipe_text = recipe_text;
  checkpoint.extra_files = task->checkpoint_files();
  io::CheckpointSaveOptions save;
  save.keep_last = 0;
  save.model_metadata["imported_from"] = result.architecture;
  result.checkpoint = io::save_checkpoint(out, checkpoint, save);
  write_file_atomically(out / io::kRecipeFile, recipe_text);
  task->tokenizer().save(out / "tokenizer");
}

}  // namespace

int run_hf_import(const HfImportRequest& request) {
  const HfImportResult r = import_hf(request);
  for (const std::string& warning : r.warnings) std::cerr << "warning: " << warning << "\n";
  std::cout << fmt::format("imported {} from {}: {} tensors, {} parameters -> {}\n", r.architecture,
                           request.source.string(), r.tensors_read, r.parameters,
                           r.checkpoint.string());
  if (!r.ignored.empty()) {
    std::cout << fmt::format("not weights, left out: {}\n", fmt::join(r.ignored, ", "));
  }
  return kExitOk;
}

}  // namespace rota::app
