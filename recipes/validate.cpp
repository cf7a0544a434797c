// Validation of a recipe: ranges, cross-field rules and fields that do not apply.
#include "recipes/validate.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "recipes/applicability.h"
#include "recipes/corpora.h"
#include "recipes/field_path.h"
#include "recipes/upgrade.h"

namespace rota::recipes {

namespace pb = google::protobuf;

namespace {

/// Shortest text that reads back as the same double.
std::string num(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}
std::string num(int64_t value) {
  return std::to_string(value);
}
std::string num(int value) {
  return std::to_string(value);
}

/// Collects issues; one helper per kind of range.
class Checker {
 public:
  explicit Checker(std::vector<Issue>& issues) : issues_(issues) {}

  void fail(std::string path, std::string message) {
    issues_.push_back({std::move(path), std::move(message)});
  }
  void at_least(const std::string& path, int64_t value, int64_t min) {
    if (value < min) fail(path, "must be >= " + num(min) + " (got " + num(value) + ")");
  }
  void in_range(const std::string& path, int64_t value, int64_t min, int64_t max) {
    if (value < min || value > max) {
      fail(path, "must be in [" + num(min) + ", " + num(max) + "] (got " + num(value) + ")");
    }
  }
  void positive(const std::string& path, double value) {
    if (!(value > 0.0)) fail(path, "must be > 0 (got " + num(value) + ")");
  }
  void non_negative(const std::string& path, double value) {
    if (!(value >= 0.0)) fail(path, "must be >= 0 (got " + num(value) + ")");
  }
  void greater_than(const std::string& path, double value, double min) {
    if (!(value > min)) fail(path, "must be > " + num(min) + " (got " + num(value) + ")");
  }
  /// [0, 1): probabilities that must leave something (dropout, momentum, betas).
  void below_one(const std::string& path, double value) {
    if (!(value >= 0.0 && value < 1.0)) fail(path, "must be in [0, 1) (got " + num(value) + ")");
  }
  void unit_interval(const std::string& path, double value) {
    if (!(value >= 0.0 && value <= 1.0)) fail(path, "must be in [0, 1] (got " + num(value) + ")");
  }
  void open_unit_interval(const std::string& path, double value) {
    if (!(value > 0.0 && value < 1.0)) fail(path, "must be in (0, 1) (got " + num(value) + ")");
  }

 private:
  std::vector<Issue>& issues_;
};

/// Longest sequence a bidirectional PermuteFormer supports: its key weights γ^(−t) grow with
/// t, and the layer (framework/nn/attention/linear_attention.cpp) refuses (n − 1)·(−ln γ) >= 80
/// (beyond float range). The smallest decay is head 0's γ = sigmoid(2) for any head count.
/// The most OpenMP threads a recipe may ask for (far above any CPU Rota runs on).
constexpr int64_t kMaxThreads = 1024;

/// The most passes over the data a recipe may ask for: far beyond any real run, and small
/// enough that epochs × steps per epoch stays a representable step count.
constexpr double kMaxEpochs = 1e6;

constexpr int kMaxBidirectionalPermuteFormerLength = 631;  // 1 + ⌊80 / −ln(sigmoid(2))⌋

const char* kind_name(const Model& model) {
  return Model::Kind_Name(model.kind()).c_str();
}

bool bidirectional(const Model& model) {
  return model.kind() != Model::CAUSAL_LM;
}

/// Linear attention unless softmax is chosen (an unset attention resolves to linear).
bool uses_linear_attention(const Model& model) {
  return !model.attention().has_softmax();
}

/// Names of the members of Position.encoding, for messages.
std::string encoding_names() {
  std::vector<std::string> names;
  const pb::OneofDescriptor* oneof = Position::descriptor()->FindOneofByName("encoding");
  for (int i = 0; i < oneof->field_count(); ++i) names.push_back(oneof->field(i)->name() + " {}");
  return join(names);
}

/// Why the linear-attention features can be negative, or "" when they cannot.
std::string signed_feature_reason(const LinearAttention& linear, const Position& position) {
  if (linear.feature_map() == LinearAttention::SILU ||
      linear.feature_map() == LinearAttention::IDENTITY) {
    return "feature map " + LinearAttention::FeatureMap_Name(linear.feature_map()) + " is signed";
  }
  if (position.has_rope()) return "RoPE rotations make the features signed";
  if (position.has_lrpe()) {
    const Lrpe& lrpe = position.lrpe();
    if (lrpe.type() == 1) return "LRPE type 1 (cos/sin) makes the features signed";
    if (lrpe.type() == 2) return "LRPE type 2 rotations make the features signed";
    if (lrpe.p() == Lrpe::HOUSEHOLDER || lrpe.p() == Lrpe::HOUSEHOLDER_FROZEN) {
      return "a Householder P makes the features signed (type 3 keeps them non-negative only "
             "with p: IDENTITY or ODD_EVEN)";
    }
  }
  return "";
}

/// The linear attention at `path` (model.attention.linear or model.hybrid.attention.linear)
/// with the position its blocks use.
void check_linear_attention(Checker& check, const LinearAttention& linear, const Position& position,
                            const std::string& path) {
  check.at_least(path + ".chunk_size", linear.chunk_size(), 1);
  if (linear.feature_map() == LinearAttention::HEDGEHOG &&
      (position.has_rope() || position.has_lrpe() || position.has_permute_former())) {
    check.fail(path + ".feature_map",
               "HEDGEHOG takes no positional encoding on the features (rope, lrpe, "
               "permute_former): set model.position to none {} or an absolute one");
  }
  if (linear.has_decay() && position.has_permute_former()) {
    check.fail(path + ".decay",
               "permute_former brings its own per-head decay; drop the decay or choose another "
               "position");
  }
  const bool gated = linear.has_gating() || linear.update_rule() == LinearAttention::DELTA;
  if (linear.has_gating() && linear.gating().kind_case() == Gating::KIND_NOT_SET) {
    check.fail(path + ".gating", "choose one gate: gla {} or ssd {}");
  }
  if (linear.gating().has_gla()) {
    check.at_least(path + ".gating.gla.rank", linear.gating().gla().rank(), 1);
    check.positive(path + ".gating.gla.temperature", linear.gating().gla().temperature());
    if (linear.update_rule() == LinearAttention::DELTA) {
      check.fail(path + ".gating.gla",
                 "GLA's per-channel gates do not combine with the DELTA rule (Gated DeltaNet "
                 "gates per head: use gating { ssd {} })");
    }
  }
  if (gated) {
    const std::string field = linear.has_gating() ? ".gating" : ".update_rule";
    if (linear.has_decay()) {
      check.fail(path + field,
                 "a data-dependent gate or the DELTA rule does not combine with a fixed decay "
                 "(drop `decay`)");
    }
    if (position.has_permute_former()) {
      check.fail(path + field, "does not combine with permute_former's own decay");
    }
    if (linear.normalization() == LinearAttention::DENOMINATOR) {
      check.fail(path + field,
                 "takes normalization LAYER_NORM, RMS_NORM or GROUP_NORM, not the DENOMINATOR");
    }
  }
  if (linear.decay().learnable() && linear.normalization() == LinearAttention::DENOMINATOR) {
    check.fail(path + ".decay.learnable",
               "a learnable decay runs the gated kernel, which takes normalization LAYER_NORM, "
               "RMS_NORM or GROUP_NORM, not the DENOMINATOR");
  }
  if (linear.normalization() == LinearAttention::DENOMINATOR) {
    check.positive(path + ".denominator_eps", linear.denominator_eps());
    const std::string reason = signed_feature_reason(linear, position);
    if (!reason.empty()) {
      check.fail(path + ".normalization", "the DENOMINATOR needs non-negative features, but " +
                                              reason + "; use LAYER_NORM or RMS_NORM");
    }
  }
}

/// The softmax attention at `path` (model.attention.softmax or model.hybrid.attention.softmax).
void check_softmax_attention(Checker& check, const SoftmaxAttention& softmax,
                             const std::string& path) {
  if (softmax.has_scale()) {
    if (!std::isfinite(softmax.scale())) {
      check.fail(path + ".scale", "must be finite (got " + num(softmax.scale()) + ")");
    } else {
      check.positive(path + ".scale", softmax.scale());
    }
  }
  check.below_one(path + ".dropout", softmax.dropout());
  if (softmax.has_streaming()) {
    check.at_least(path + ".streaming.chunk", softmax.streaming().chunk(), 1);
    check.at_least(path + ".streaming.left_memory", softmax.streaming().left_memory(), -1);
  }
  if (softmax.has_window()) {
    check.at_least(path + ".window", softmax.window(), 1);
    if (softmax.has_streaming()) {
      check.fail(path + ".window",
                 "a sliding window and streaming are two visibility rules; choose one");
    }
  }
}

/// The position at `path` (model.position, or model.hybrid.position with `linear` the family
/// of the hybrid's blocks).
void check_position(Checker& check, const Recipe& recipe, const Position& position, bool linear,
                    const std::string& path) {
  const Model& model = recipe.model();
  const int sequence_length = recipe.data().sequence_length();
  auto needs_linear = [&](const std::string& member, const std::string& what) {
    if (!linear) {
      check.fail(path + "." + member,
                 what +
                     " acts on linear-attention features; use attention { linear {} }, or a "
                     "softmax encoding (rope, shaw, transformer_xl, skew, t5, alibi)");
    }
  };
  auto needs_softmax = [&](const std::string& member, const std::string& what) {
    if (linear) {
      check.fail(path + "." + member,
                 what +
                     " needs softmax attention (linear attention never forms the N×N score "
                     "matrix it acts on); use attention { softmax {} }");
    }
  };
  switch (position.encoding_case()) {
    case Position::ENCODING_NOT_SET:
      check.fail(path, "no positional encoding chosen; set one of " + encoding_names() +
                           " (none {} is NoPE)");
      break;
    case Position::kNone:
      break;  // a bidirectional NoPE model is a bag-of-words baseline: recipe_warnings
    case Position::kSinusoidal:
      check.greater_than(path + ".sinusoidal.base", position.sinusoidal().base(), 1.0);
      break;
    case Position::kLearnedAbsolute: {
      const int max_positions = position.learned_absolute().max_positions();
      if (max_positions < sequence_length) {
        check.fail(path + ".learned_absolute.max_positions", "must be >= data.sequence_length " +
                                                                 num(sequence_length) + " (got " +
                                                                 num(max_positions) + ")");
      }
      break;
    }
    case Position::kRope: {
      check.greater_than(path + ".rope.base", position.rope().base(), 1.0);
      const RopeScaling& scaling = position.rope().scaling();
      const std::string at = path + ".rope.scaling";
      if (scaling.has_linear()) check.positive(at + ".linear.factor", scaling.linear().factor());
      if (scaling.has_llama3()) {
        const Llama3RopeScaling& l = scaling.llama3();
        check.positive(at + ".llama3.factor", l.factor());
        check.positive(at + ".llama3.low_freq_factor", l.low_freq_factor());
        if (l.low_freq_factor() > 0 && !(l.high_freq_factor() > l.low_freq_factor())) {
          check.fail(at + ".llama3.high_freq_factor", "must be greater than low_freq_factor " +
                                                          num(l.low_freq_factor()) + " (got " +
                                                          num(l.high_freq_factor()) + ")");
        }
        check.at_least(at + ".llama3.original_max_positions", l.original_max_positions(), 1);
      }
      if (position.rope().has_scaling() && scaling.kind_case() == RopeScaling::KIND_NOT_SET) {
        check.fail(at, "set one of linear, llama3 (or leave scaling out)");
      }
      break;
    }
    case Position::kLrpe: {
      const Lrpe& lrpe = position.lrpe();
      needs_linear("lrpe", "LRPE");
      if (lrpe.type() < 1 || lrpe.type() > 3) {
        check.fail(path + ".lrpe.type", "must be 1, 2 or 3 (got " + num(lrpe.type()) + ")");
      }
      if (lrpe.type() != 3 && lrpe.has_theta_base()) {
        check.greater_than(path + ".lrpe.theta_base", lrpe.theta_base(), 1.0);
      }
      break;
    }
    case Position::kPermuteFormer:
      needs_linear("permute_former", "PermuteFormer");
      if (bidirectional(model) && sequence_length > kMaxBidirectionalPermuteFormerLength) {
        check.fail(path + ".permute_former",
                   "bidirectional PermuteFormer weights γ^(s−t) overflow past " +
                       num(kMaxBidirectionalPermuteFormerLength) +
                       " positions (data.sequence_length " + num(sequence_length) + ")");
      }
      break;
    case Position::kShaw: {
      const Shaw& shaw = position.shaw();
      needs_softmax("shaw", "Shaw's relative tables");
      check.at_least(path + ".shaw.clip", shaw.clip(), 1);
      if (shaw.has_clip_left()) check.at_least(path + ".shaw.clip_left", shaw.clip_left(), 0);
      if (shaw.has_clip_right()) check.at_least(path + ".shaw.clip_right", shaw.clip_right(), 0);
      break;
    }
    case Position::kTransformerXl: {
      const TransformerXl& xl = position.transformer_xl();
      needs_softmax("transformer_xl", "Transformer-XL's relative attention");
      if (xl.has_pe_width() && (xl.pe_width() < 2 || xl.pe_width() % 2 != 0)) {
        check.fail(path + ".transformer_xl.pe_width",
                   "must be even and >= 2 (got " + num(xl.pe_width()) + ")");
      }
      check.greater_than(path + ".transformer_xl.base", xl.base(), 1.0);
      break;
    }
    case Position::kSkew: {
      needs_softmax("skew", "The skew's relative embeddings");
      const int max_len = position.skew().max_len();
      if (max_len < sequence_length) {
        check.fail(path + ".skew.max_len", "must be >= data.sequence_length " +
                                               num(sequence_length) + " (got " + num(max_len) +
                                               ")");
      }
      break;
    }
    case Position::kT5: {
      const T5& t5 = position.t5();
      needs_softmax("t5", "The T5 bias");
      const bool both_ways = t5.has_bidirectional() ? t5.bidirectional() : bidirectional(model);
      if (!both_ways && bidirectional(model)) {
        check.fail(path + ".t5.bidirectional",
                   std::string("a ") + kind_name(model) +
                       " attends to later tokens too, and unidirectional buckets send every "
                       "future key to bucket 0; set bidirectional: true");
      }
      const int min_buckets = both_ways ? 4 : 2;
      if (t5.buckets() < min_buckets) {
        check.fail(path + ".t5.buckets", "must be >= " + num(min_buckets) +
                                             (both_ways ? " with bidirectional buckets" : "") +
                                             " (got " + num(t5.buckets()) + ")");
      } else {
        // Exact range E = n'/2 with n' = N_b/2 (bidirectional) or N_b; the log buckets divide
        // by ln(L/E), so L must exceed E.
        const int exact = (both_ways ? t5.buckets() / 2 : t5.buckets()) / 2;
        if (t5.max_distance() <= exact) {
          check.fail(path + ".t5.max_distance", "must exceed the exact range " + num(exact) +
                                                    " of " + num(t5.buckets()) + " buckets (got " +
                                                    num(t5.max_distance()) + ")");
        }
      }
      break;
    }
    case Position::kAlibi:
      needs_softmax("alibi", "ALiBi's distance bias");
      break;
  }
}

/// model.hybrid: the blocks it selects and their attention and position (the ones in
/// model.hybrid.position, or model.position when it is absent).
void check_hybrid(Checker& check, const Recipe& recipe) {
  const Model& model = recipe.model();
  const Hybrid& hybrid = model.hybrid();
  const std::string path = "model.hybrid";
  const int layers = model.layers();
  if (layers < 2) {
    check.fail(path, "a hybrid stack mixes blocks, and this model has " + num(layers) +
                         " layer(s) (model.layers must be >= 2)");
    return;
  }
  std::set<int> selected;
  if (hybrid.has_every()) {
    if (hybrid.every() < 2) {
      check.fail(path + ".every", "must be >= 2 (got " + num(hybrid.every()) +
                                      "; every block alike: set model.attention instead)");
    } else {
      for (int i = hybrid.every() - 1; i < layers; i += hybrid.every()) selected.insert(i);
    }
  }
  for (int i = 0; i < hybrid.blocks_size(); ++i) {
    const std::string at = path + ".blocks[" + num(i) + "]";
    const int block = hybrid.blocks(i);
    if (block < 0 || block >= layers) {
      check.fail(at, "block " + num(block) + " is not in [0, " + num(layers) +
                         ") (0-based; model.layers is " + num(layers) + ")");
      continue;
    }
    for (int j = 0; j < i; ++j) {
      if (hybrid.blocks(j) == block) check.fail(at, "block " + num(block) + " is listed twice");
    }
    selected.insert(block);
  }
  if (!hybrid.has_every() && hybrid.blocks_size() == 0) {
    check.fail(path, "selects no block: set every, blocks or both");
  } else if (hybrid.has_every() && hybrid.every() >= 2 && hybrid.blocks_size() == 0 &&
             selected.empty()) {
    check.fail(path + ".every",
               "every " + num(hybrid.every()) + " selects no block of " + num(layers) + " layers");
  } else if (static_cast<int>(selected.size()) == layers) {
    check.fail(path, "selects every block; set model.attention (and model.position) instead");
  }
  if (!hybrid.has_attention() || hybrid.attention().kind_case() == Attention::KIND_NOT_SET) {
    check.fail(path + ".attention",
               "required: the attention of the selected blocks (linear {} "
               "or softmax {})");
    return;
  }
  const bool linear = !hybrid.attention().has_softmax();
  const std::string family = linear ? "linear" : "softmax";
  const Position& position = hybrid.has_position() ? hybrid.position() : model.position();
  if (hybrid.has_position()) {
    const Position& own = hybrid.position();
    if (own.has_sinusoidal() || own.has_learned_absolute()) {
      check.fail(path + ".position",
                 "absolute encodings are added to the token embeddings once for the whole "
                 "stack; set them in model.position (leave model.hybrid.position out, or choose "
                 "an encoding that acts in the attention)");
    } else if (own.has_t5()) {
      check.fail(path + ".position.t5",
                 "T5 shares one bias table across the stack; it cannot be used in a hybrid");
    } else {
      check_position(check, recipe, own, linear, path + ".position");
    }
  } else {
    const bool absolute = position.has_sinusoidal() || position.has_learned_absolute();
    const bool applies = absolute || position.has_none() || position.has_rope() ||
                         (linear ? position.has_lrpe() || position.has_permute_former()
                                 : !position.has_lrpe() && !position.has_permute_former());
    if (!applies) {
      check.fail(path + ".position", "absent, so the " + family +
                                         " blocks would use model.position, which does "
                                         "not apply to " +
                                         family + " attention; set model.hybrid.position");
    } else if (position.has_t5()) {
      check.fail(path + ".position",
                 "absent, so the blocks would share model.position's T5 table; T5 (one bias "
                 "table per stack) cannot be used in a hybrid");
    }
  }
  if (model.position().has_t5()) {
    check.fail("model.position.t5",
               "T5 shares one bias table across the stack; it cannot be used with model.hybrid");
  }
  if (linear) {
    check_linear_attention(check, hybrid.attention().linear(), position,
                           path + ".attention.linear");
  } else {
    check_softmax_attention(check, hybrid.attention().softmax(), path + ".attention.softmax");
  }
  const auto no_streaming = [&](const Attention& a, const std::string& at) {
    if (a.has_softmax() && a.softmax().has_streaming()) {
      check.fail(at + ".softmax.streaming",
                 "streaming chunk visibility is not supported in a hybrid stack");
    }
  };
  no_streaming(hybrid.attention(), path + ".attention");
  no_streaming(model.attention(), "model.attention");
}

void check_model(Checker& check, const Recipe& recipe) {
  const Model& model = recipe.model();
  check.at_least("model.width", model.width(), 1);
  check.at_least("model.layers", model.layers(), 1);
  check.at_least("model.heads", model.heads(), 1);
  if (model.width() >= 1 && model.heads() >= 1 && model.width() % model.heads() != 0) {
    check.fail("model.heads",
               "width " + num(model.width()) + " is not divisible by heads " + num(model.heads()));
  }
  if (model.has_ffn_width()) check.at_least("model.ffn_width", model.ffn_width(), 1);
  if (model.has_vocab_size()) check.at_least("model.vocab_size", model.vocab_size(), 1);
  if (model.has_kv_heads()) {
    check.at_least("model.kv_heads", model.kv_heads(), 1);
    if (model.kv_heads() >= 1 && model.heads() >= 1 && model.heads() % model.kv_heads() != 0) {
      check.fail("model.kv_heads", "heads " + num(model.heads()) +
                                       " is not a multiple of kv_heads " + num(model.kv_heads()));
    }
    const bool any_softmax = model.attention().has_softmax() ||
                             (model.has_hybrid() && model.hybrid().attention().has_softmax());
    if (!any_softmax && model.kv_heads() != model.heads()) {
      check.fail("model.kv_heads",
                 "grouped-query attention applies to softmax attention; every block here uses "
                 "linear attention, which keeps one key and value head per query head (leave "
                 "kv_heads out or set it to heads)");
    }
  }
  check.positive("model.norm_eps", model.norm_eps());
  check.below_one("model.dropout", model.dropout());
  check.positive("model.init_std", model.init_std());
  if (model.attention().has_softmax()) {
    check_softmax_attention(check, model.attention().softmax(), "model.attention.softmax");
  } else {
    check_linear_attention(check, model.attention().linear(), model.position(),
                           "model.attention.linear");
  }
  check_position(check, recipe, model.position(), uses_linear_attention(model), "model.position");
  if (model.has_hybrid()) check_hybrid(check, recipe);
  if (model.kind() == Model::CLASSIFIER) {
    if (!model.classifier().has_num_classes()) {
      check.fail("model.classifier.num_classes", "required for kind CLASSIFIER");
    } else {
      const int classes = model.classifier().num_classes();
      check.at_least("model.classifier.num_classes", classes, 2);
      const Data& data = recipe.data();
      const KnownCorpus* corpus = data.has_corpus() ? find_corpus(data.corpus()) : nullptr;
      if (corpus != nullptr && corpus->tsv && classes >= 2 && classes != corpus->num_classes) {
        check.fail("model.classifier.num_classes", std::string(corpus->name) + " has " +
                                                       num(corpus->num_classes) + " classes (got " +
                                                       num(classes) + ")");
      }
    }
  }
}

void check_tokenizer(Checker& check, const Tokenizer& tokenizer) {
  const std::string path = "data.tokenizer";
  if (tokenizer.has_path() && tokenizer.path().empty()) {
    check.fail(path + ".path", "must not be empty");
  }
  if (tokenizer.has_path()) return;
  if (tokenizer.kind() == Tokenizer::HUGGINGFACE) {
    check.fail(path + ".kind",
               "HUGGINGFACE tokenizers are loaded, not trained: give data.tokenizer.path (a "
               "tokenizer.json)");
    return;
  }
  const bool sentencepiece = tokenizer.kind() == Tokenizer::SENTENCEPIECE_BPE ||
                             tokenizer.kind() == Tokenizer::SENTENCEPIECE_UNIGRAM;
  if (sentencepiece) {
    const double coverage = tokenizer.character_coverage();
    if (!(coverage > 0.0 && coverage <= 1.0)) {
      check.fail(path + ".character_coverage", "must be in (0, 1] (got " + num(coverage) + ")");
    }
    if (!tokenizer.has_vocab_size()) {
      check.fail(path + ".vocab_size",
                 "required for " + Tokenizer::Kind_Name(tokenizer.kind()) + " (e.g. 8192)");
    } else {
      check.at_least(path + ".vocab_size", tokenizer.vocab_size(), 16);
    }
  }
  if (tokenizer.kind() == Tokenizer::WORD) {
    if (tokenizer.has_vocab_size()) check.at_least(path + ".vocab_size", tokenizer.vocab_size(), 2);
    check.at_least(path + ".min_freq", tokenizer.min_freq(), 1);
  }
}

/// The extension of a path's last component, lower-cased ("" when none).
std::string lower_extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string extension = path.substr(dot);
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension;
}

/// A data file that is not running text: .jsonl .ndjson .json .csv .tsv.
bool structured_extension(const std::string& path) {
  const std::string extension = lower_extension(path);
  return extension == ".jsonl" || extension == ".ndjson" || extension == ".json" ||
         extension == ".csv" || extension == ".tsv";
}

void check_files(Checker& check, const Recipe& recipe) {
  const Files& files = recipe.data().files();
  const Model& model = recipe.model();
  const std::string path = "data.files";
  const bool classifier = model.kind() == Model::CLASSIFIER;
  if (!files.has_train() || files.train().empty()) {
    check.fail(path + ".train", "required: a file, a directory or a glob pattern");
  }
  if (files.has_valid() && files.valid().empty()) check.fail(path + ".valid", "must not be empty");
  if (files.has_test() && files.test().empty()) check.fail(path + ".test", "must not be empty");
  if (!files.has_valid())
    check.open_unit_interval(path + ".valid_fraction", files.valid_fraction());
  const bool text_format = files.format() == Files::TEXT;
  if (text_format) {
    for (const auto& [field, value] :
         {std::pair<const char*, const std::string&>{"train", files.train()},
          {"valid", files.valid()},
          {"test", files.test()}}) {
      if (structured_extension(value)) {
        check.fail(path + "." + field, "'" + value +
                                           "' is JSON/CSV/TSV data, but format TEXT reads running "
                                           "text (training would learn its syntax); set format "
                                           "JSONL, CSV or TSV and text_field");
      }
    }
  }
  if (classifier && text_format) {
    check.fail(path + ".format",
               "a CLASSIFIER needs labelled records (JSONL, CSV or TSV), not TEXT files");
  }
  if (classifier && files.format() == Files::AUTO) {
    for (const auto& [field, value] :
         {std::pair<const char*, const std::string&>{"train", files.train()},
          {"valid", files.valid()},
          {"test", files.test()}}) {
      const std::string extension = lower_extension(value);
      if (extension == ".txt" || extension == ".text") {
        check.fail(path + "." + field, "'" + value +
                                           "' is a text file, but a CLASSIFIER needs labelled "
                                           "records (JSONL, CSV or TSV)");
      }
    }
  }
  if (files.text_field().empty() && !text_format) {
    check.fail(path + ".text_field", "must not be empty");
  }
  if (classifier && !text_format) {
    if (files.label_field().empty()) check.fail(path + ".label_field", "must not be empty");
    if (files.label_field() == files.text_field()) {
      check.fail(path + ".label_field",
                 "is the same field as text_field ('" + files.text_field() + "')");
    }
    if (files.has_text_pair_field() &&
        (files.text_pair_field().empty() || files.text_pair_field() == files.text_field() ||
         files.text_pair_field() == files.label_field())) {
      check.fail(path + ".text_pair_field",
                 "must be a field other than text_field and "
                 "label_field (got '" +
                     files.text_pair_field() + "')");
    }
  }
  std::set<std::string> seen;
  for (int i = 0; i < files.labels_size(); ++i) {
    const std::string& label = files.labels(i);
    const std::string at = path + ".labels[" + num(i) + "]";
    if (label.empty()) check.fail(at, "must not be empty");
    if (!seen.insert(label).second) check.fail(at, "\"" + label + "\" is listed twice");
  }
  if (classifier && files.labels_size() > 0 && model.classifier().has_num_classes() &&
      model.classifier().num_classes() != files.labels_size()) {
    check.fail("model.classifier.num_classes", num(model.classifier().num_classes()) +
                                                   " classes, but data.files.labels lists " +
                                                   num(files.labels_size()));
  }
}

void check_data(Checker& check, const Recipe& recipe) {
  const Data& data = recipe.data();
  const Model& model = recipe.model();
  if (data.has_document_separator() && data.document_separator().empty()) {
    check.fail("data.document_separator", "must not be empty (the text that ends a document)");
  }
  if (data.documents() == Data::SEPARATOR_IN_TEXT && data.has_documents() &&
      !data.has_document_separator()) {
    check.fail("data.documents",
               "SEPARATOR_IN_TEXT needs data.document_separator (the text that ends a document)");
  }
  std::string source_path;
  switch (data.source_case()) {
    case Data::SOURCE_NOT_SET:
      check.fail("data", "no data source; set one of corpus, text_dir, tsv_dir, files, prepared");
      break;
    case Data::kCorpus:
      source_path = "data.corpus";
      if (find_corpus(data.corpus()) == nullptr) {
        check.fail(source_path, "unknown corpus '" + data.corpus() + "'" +
                                    did_you_mean(data.corpus(), corpus_names()) +
                                    "; registered: " + join(corpus_names()) +
                                    " (text_dir or tsv_dir read local files)");
        source_path.clear();  // no further judgement about an unknown corpus
      }
      break;
    case Data::kTextDir:
      source_path = "data.text_dir";
      if (data.text_dir().empty()) check.fail(source_path, "must not be empty");
      if (structured_extension(data.text_dir())) {
        check.fail(source_path, "'" + data.text_dir() +
                                    "' is JSON/CSV/TSV data, but text_dir reads running text "
                                    "(training would learn its syntax); use data.files with "
                                    "format JSONL, CSV or TSV and text_field");
      }
      break;
    case Data::kTsvDir:
      source_path = "data.tsv_dir";
      if (data.tsv_dir().empty()) check.fail(source_path, "must not be empty");
      break;
    case Data::kPrepared:
      source_path = "data.prepared";
      if (data.prepared().empty()) check.fail(source_path, "must not be empty");
      break;
    case Data::kFiles:
      check_files(check, recipe);
      break;
    default:
      break;
  }
  if (!source_path.empty()) {
    if (model.kind() == Model::CLASSIFIER && !is_tsv_source(data)) {
      check.fail(source_path,
                 "a CLASSIFIER needs labelled TSV data (corpus sst-2 or cola, or "
                 "tsv_dir, or files), not running text");
    }
    if (model.kind() != Model::CLASSIFIER && !is_text_source(data)) {
      check.fail(source_path, std::string("a ") + kind_name(model) +
                                  " trains on running text (corpus tinyshakespeare or "
                                  "wikitext-2, or text_dir), not labelled TSV");
    }
  }
  if (data.has_tsv()) {
    const TsvColumns& tsv = data.tsv();
    if (tsv.text().empty()) check.fail("data.tsv.text", "must not be empty");
    if (tsv.label().empty()) check.fail("data.tsv.label", "must not be empty");
    if (!tsv.label().empty() && tsv.label() == tsv.text()) {
      check.fail("data.tsv.label", "is the same column as text ('" + tsv.text() + "')");
    }
    if (tsv.has_text_pair() && (tsv.text_pair().empty() || tsv.text_pair() == tsv.text() ||
                                tsv.text_pair() == tsv.label())) {
      check.fail("data.tsv.text_pair",
                 "must be a column other than text and label (got '" + tsv.text_pair() + "')");
    }
  }
  check_tokenizer(check, data.tokenizer());
  check.at_least("data.sequence_length", data.sequence_length(), 1);
  check.at_least("data.batch_size", data.batch_size(), 1);
  const int accumulation = recipe.train().gradient_accumulation();
  if (data.batch_size() >= 1 && accumulation >= 1 && data.batch_size() % accumulation != 0) {
    check.fail("data.batch_size",
               num(data.batch_size()) + " is not divisible by train.gradient_accumulation " +
                   num(accumulation) +
                   " (each micro-batch holds batch_size / gradient_accumulation sequences)");
  }
  if (data.has_mlm()) {
    const Masking& mlm = data.mlm();
    check.open_unit_interval("data.mlm.probability", mlm.probability());
    check.unit_interval("data.mlm.mask_fraction", mlm.mask_fraction());
    check.unit_interval("data.mlm.random_fraction", mlm.random_fraction());
    if (mlm.mask_fraction() + mlm.random_fraction() > 1.0 + 1e-12) {
      check.fail("data.mlm.random_fraction", "mask_fraction + random_fraction = " +
                                                 num(mlm.mask_fraction() + mlm.random_fraction()) +
                                                 " exceeds 1");
    }
  }
}

template <typename AdamLike>
void check_adam(Checker& check, const std::string& path, const AdamLike& adam) {
  check.below_one(path + ".beta1", adam.beta1());
  check.below_one(path + ".beta2", adam.beta2());
  check.positive(path + ".eps", adam.eps());
  check.non_negative(path + ".weight_decay", adam.weight_decay());
}

void check_optimizer(Checker& check, const Optimizer& optimizer) {
  switch (optimizer.kind_case()) {
    case Optimizer::kSgd:
      check.below_one("optimizer.sgd.momentum", optimizer.sgd().momentum());
      check.non_negative("optimizer.sgd.weight_decay", optimizer.sgd().weight_decay());
      if (optimizer.sgd().nesterov() && !(optimizer.sgd().momentum() > 0.0)) {
        check.fail("optimizer.sgd.nesterov", "needs momentum > 0");
      }
      break;
    case Optimizer::kAdam:
      check_adam(check, "optimizer.adam", optimizer.adam());
      break;
    case Optimizer::kAdamw:
      check_adam(check, "optimizer.adamw", optimizer.adamw());
      break;
    case Optimizer::KIND_NOT_SET:
      break;  // resolves to adamw {}
  }
}

void check_schedule(Checker& check, const Recipe& recipe) {
  const Schedule& schedule = recipe.schedule();
  check.positive("schedule.lr", schedule.lr());
  if (schedule.has_min_lr() && !(schedule.min_lr() >= 0.0 && schedule.min_lr() <= schedule.lr())) {
    check.fail("schedule.min_lr", "must be in [0, lr = " + num(schedule.lr()) + "] (got " +
                                      num(schedule.min_lr()) + ")");
  }
  check.at_least("schedule.warmup_steps", schedule.warmup_steps(), 0);
  check.unit_interval("schedule.warmup_start_factor", schedule.warmup_start_factor());
  if (schedule.kind() == Schedule::INVERSE_SQRT && schedule.warmup_steps() < 1) {
    check.fail("schedule.warmup_steps",
               "INVERSE_SQRT needs warmup_steps >= 1 (its lr is lr·√W/√t)");
  }
  const bool decays_to_end =
      schedule.kind() == Schedule::LINEAR || schedule.kind() == Schedule::COSINE;
  const Train& train = recipe.train();
  if (decays_to_end && train.has_steps() && train.steps() >= 1 &&
      schedule.warmup_steps() >= train.steps()) {
    check.fail("schedule.warmup_steps", "must be less than train.steps " + num(train.steps()) +
                                            " for a " + Schedule::Kind_Name(schedule.kind()) +
                                            " schedule (got " + num(schedule.warmup_steps()) +
                                            "); for a short run also set it, e.g. --set "
                                            "schedule.warmup_steps=" +
                                            num(train.steps() / 10));
  }
}

void check_train(Checker& check, const Recipe& recipe) {
  const Train& train = recipe.train();
  switch (train.length_case()) {
    case Train::LENGTH_NOT_SET:
      check.fail("train", "set exactly one of steps or epochs");
      break;
    case Train::kSteps:
      check.at_least("train.steps", train.steps(), 1);
      break;
    case Train::kEpochs:
      if (!(train.epochs() > 0.0 && train.epochs() <= kMaxEpochs)) {
        check.fail("train.epochs",
                   "must be in (0, " + num(kMaxEpochs) + "] (got " + num(train.epochs()) + ")");
      }
      break;
  }
  check.at_least("train.gradient_accumulation", train.gradient_accumulation(), 1);
  check.non_negative("train.grad_clip", train.grad_clip());
  check.at_least("train.eval_every", train.eval_every(), 0);
  check.at_least("train.eval_batches", train.eval_batches(), 0);
  check.at_least("train.checkpoint_every", train.checkpoint_every(), 0);
  check.at_least("train.keep_checkpoints", train.keep_checkpoints(), 1);
  check.at_least("train.log_every", train.log_every(), 1);
  // OpenMP cannot start an arbitrary number of threads (100000 crashed inside libgomp).
  check.in_range("train.threads", train.threads(), 0, kMaxThreads);
  const Model& model = recipe.model();
  check.at_least("train.segment_length", train.segment_length(), 0);
  if (train.segment_length() > 0) {
    const std::string reason = segment_refusal(model);
    if (!reason.empty()) check.fail("train.segment_length", reason);
    if (train.recompute_blocks()) {
      check.fail("train.segment_length",
                 "does not combine with train.recompute_blocks (every segment is recomputed "
                 "already); keep one");
    }
  }
  if (train.carry_state()) {
    const std::string reason = segment_refusal(model);
    if (!reason.empty()) check.fail("train.carry_state", reason);
    if (train.recompute_blocks()) {
      check.fail("train.carry_state",
                 "does not combine with train.recompute_blocks; bound a long window's memory "
                 "with train.segment_length instead");
    }
  }
  if (train.has_early_stopping()) {
    const EarlyStopping& stopping = train.early_stopping();
    if (!stopping.has_patience()) {
      check.fail("train.early_stopping.patience",
                 "required: the evaluations in a row without improvement that end the run");
    } else {
      check.at_least("train.early_stopping.patience", stopping.patience(), 1);
    }
    if (!(std::isfinite(stopping.min_delta()) && stopping.min_delta() >= 0)) {
      check.fail("train.early_stopping.min_delta",
                 "must be a finite number >= 0 (got " + num(stopping.min_delta()) + ")");
    }
    if (train.eval_every() == 0) {
      check.fail("train.early_stopping",
                 "needs train.eval_every > 0 (with 0 the run evaluates only at its end)");
    }
  }
  if (train.has_best_metric() && train.best_metric() != Train::LOSS &&
      model.kind() != Model::CLASSIFIER) {
    check.fail("train.best_metric", Train::Metric_Name(train.best_metric()) +
                                        " is a classifier metric; a " + kind_name(model) +
                                        " tracks LOSS");
  }
  if (train.has_sample()) {
    const Sample& sample = train.sample();
    if (sample.prompt().empty()) {
      check.fail("train.sample.prompt", "required: the text the sample continues");
    }
    check.at_least("train.sample.tokens", sample.tokens(), 1);
    check.non_negative("train.sample.temperature", sample.temperature());
    check.at_least("train.sample.top_k", sample.top_k(), 0);
  }
}

void check_finetune(Checker& check, const Recipe& recipe) {
  if (!recipe.has_finetune()) return;
  const Finetune& finetune = recipe.finetune();
  if (finetune.init_from().empty()) {
    check.fail("finetune.init_from", "required: the checkpoint or run directory to start from");
  }
  // A list of names (letters, digits, '_', '.'), each once.
  const auto check_names = [&check](const pb::RepeatedPtrField<std::string>& names,
                                    const std::string& field, const std::string& what) {
    std::set<std::string> seen;
    for (int i = 0; i < names.size(); ++i) {
      const std::string& name = names.Get(i);
      const std::string path = field + "[" + num(i) + "]";
      bool clean = !name.empty();
      for (char c : name) {
        clean = clean && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
      }
      if (!clean) {
        check.fail(path, "'" + name + "' is not " + what);
      } else if (!seen.insert(name).second) {
        check.fail(path, "'" + name + "' is listed twice");
      }
    }
  };
  check_names(finetune.freeze(), "finetune.freeze",
              "a parameter-name prefix (letters, digits, '_', '.') nor a shorthand (embeddings, "
              "encoder)");
  if (finetune.has_lora()) {
    const Lora& lora = finetune.lora();
    // An adapter wider than the model is a full-rank one (and a way to ask for unbounded
    // memory); each layer's own min(in, out) is checked when the adapters are added.
    check.in_range("finetune.lora.rank", lora.rank(), 1,
                   std::max<int64_t>(1, recipe.model().width()));
    if (!(lora.alpha() > 0.0 && std::isfinite(lora.alpha()))) {
      check.fail("finetune.lora.alpha",
                 "must be a finite number > 0 (got " + num(lora.alpha()) + ")");
    }
    check.below_one("finetune.lora.dropout", lora.dropout());
    check_names(lora.targets(), "finetune.lora.targets",
                "a layer name (letters, digits, '_', '.'), e.g. q_proj or ffn.fc1");
    check_names(lora.train(), "finetune.lora.train",
                "a parameter-name prefix (letters, digits, '_', '.') nor a shorthand (biases, "
                "norms, embeddings, positional)");
  }
}

void check_linearize(Checker& check, const Recipe& recipe) {
  if (!recipe.has_linearize()) return;
  if (!recipe.has_finetune() || recipe.finetune().init_from().empty()) {
    check.fail("linearize",
               "needs finetune.init_from: the softmax-attention model to linearise "
               "(the teacher)");
  }
  const Model& model = recipe.model();
  if (model.kind() != Model::CAUSAL_LM) {
    check.fail("linearize", std::string("attention transfer is for causal language models; "
                                        "model.kind is ") +
                                kind_name(model));
  }
  if (!model.attention().has_linear() || model.has_hybrid()) {
    check.fail("linearize",
               "the student needs linear attention in every block: set "
               "model.attention { linear { ... } } (and no model.hybrid)");
  }
  if (recipe.train().carry_state() || recipe.train().segment_length() > 0) {
    check.fail("linearize",
               "attention transfer trains on whole windows: remove "
               "train.carry_state and train.segment_length");
  }
  if (recipe.data().has_document_separator()) {
    check.fail("linearize",
               "attention transfer does not separate packed documents: remove "
               "data.document_separator");
  }
}

/// Every field that is set although it does not apply.
void check_applicability(Checker& check, const Recipe& recipe, const pb::Message& message,
                         const std::string& path) {
  std::vector<const pb::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string field_path = path.empty() ? field->name() : path + "." + field->name();
    if (const auto reason = inapplicable_reason(recipe, message, *field)) {
      check.fail(field_path, "does not apply: " + *reason + "; remove it");
      continue;
    }
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const pb::Reflection* reflection = message.GetReflection();
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        check_applicability(check, recipe, reflection->GetRepeatedMessage(message, field, i),
                            field_path + "[" + num(i) + "]");
      }
    } else {
      check_applicability(check, recipe, reflection->GetMessage(message, field), field_path);
    }
  }
}

/// Every real-valued field that is set must be a finite number: no field of a recipe means
/// anything at ±inf or NaN, and the range checks above (written as `!(value > 0)` and the like)
/// would pass +inf through to the run.
void check_finite_numbers(Checker& check, const pb::Message& recipe) {
  for_each_set_field(recipe, [&](const std::string& path, const pb::Message& parent,
                                 const pb::FieldDescriptor* field, int index) {
    const pb::Reflection* reflection = parent.GetReflection();
    double value = 0;
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
      value = index < 0 ? reflection->GetDouble(parent, field)
                        : reflection->GetRepeatedDouble(parent, field, index);
    } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT) {
      value = index < 0 ? reflection->GetFloat(parent, field)
                        : reflection->GetRepeatedFloat(parent, field, index);
    } else {
      return;
    }
    if (!std::isfinite(value)) check.fail(path, "must be a finite number (got " + num(value) + ")");
  });
}

}  // namespace

std::vector<Issue> validate_recipe(const Recipe& recipe) {
  std::vector<Issue> issues;
  Checker check(issues);
  if (!recipe.has_version()) {
    check.fail("version", "missing; this Rota reads version " + num(kRecipeVersion));
  } else if (recipe.version() != kRecipeVersion) {
    check.fail("version", "must be " + num(kRecipeVersion) + " (got " + num(recipe.version()) +
                              "); load the recipe through load_recipe to upgrade it");
  }
  check_applicability(check, recipe, recipe, "");
  check_finite_numbers(check, recipe);
  check_model(check, recipe);
  check_data(check, recipe);
  check_optimizer(check, recipe.optimizer());
  check_schedule(check, recipe);
  check_train(check, recipe);
  check_finetune(check, recipe);
  check_linearize(check, recipe);
  return issues;
}

std::vector<Issue> recipe_warnings(const Recipe& recipe) {
  std::vector<Issue> warnings;
  const Model& model = recipe.model();
  if (bidirectional(model) && model.position().has_none()) {
    warnings.push_back({"model.position.none",
                        std::string("a ") + kind_name(model) +
                            " without positions cannot tell word order (bidirectional attention is "
                            "permutation-invariant): it trains as a bag-of-words baseline"});
  }
  return warnings;
}

std::string segment_refusal(const Model& model) {
  if (model.attention().has_softmax()) {
    return "softmax attention has no fixed-size state to carry from one segment to the next";
  }
  if (model.has_hybrid()) {
    return "a hybrid stack's softmax blocks have no fixed-size state to carry between segments";
  }
  return "";
}

}  // namespace rota::recipes
