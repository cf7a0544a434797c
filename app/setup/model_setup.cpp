// Recipe → models::ModelOptions.
#include "app/setup/model_setup.h"

#include <optional>
#include <set>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "recipes/recipe_error.h"
#include "recipes/resolve.h"

namespace rota::app {

namespace {

nn::Activation activation_of(recipes::Model::Activation a) {
  switch (a) {
    case recipes::Model::RELU:
      return nn::Activation::kRelu;
    case recipes::Model::GELU:
      return nn::Activation::kGelu;
    case recipes::Model::GELU_TANH:
      return nn::Activation::kGeluTanh;
    case recipes::Model::SILU:
      return nn::Activation::kSilu;
    case recipes::Model::SWIGLU:
      return nn::Activation::kSwiglu;
    case recipes::Model::GEGLU:
      return nn::Activation::kGeglu;
  }
  return nn::Activation::kGelu;
}

models::InitScheme init_scheme_of(recipes::Model::InitScheme scheme) {
  switch (scheme) {
    case recipes::Model::NORMAL:
      return models::InitScheme::kNormal;
    case recipes::Model::GPT2:
      return models::InitScheme::kGpt2;
    case recipes::Model::WIDTH_SCALED:
      return models::InitScheme::kWidthScaled;
    case recipes::Model::PYTORCH:
      return models::InitScheme::kPyTorch;
    case recipes::Model::FAIRSEQ:
      return models::InitScheme::kFairseq;
  }
  return models::InitScheme::kNormal;
}

nn::FeatureMap feature_map_of(recipes::LinearAttention::FeatureMap f) {
  switch (f) {
    case recipes::LinearAttention::ONE_PLUS_ELU:
      return nn::FeatureMap::kOnePlusElu;
    case recipes::LinearAttention::RELU:
      return nn::FeatureMap::kRelu;
    case recipes::LinearAttention::SILU:
      return nn::FeatureMap::kSilu;
    case recipes::LinearAttention::IDENTITY:
      return nn::FeatureMap::kIdentity;
    case recipes::LinearAttention::EXP:
      return nn::FeatureMap::kExp;
    case recipes::LinearAttention::HEDGEHOG:
      return nn::FeatureMap::kHedgehog;
  }
  return nn::FeatureMap::kOnePlusElu;
}

nn::LinearAttentionNorm norm_of(recipes::LinearAttention::Normalization n) {
  switch (n) {
    case recipes::LinearAttention::LAYER_NORM:
      return nn::LinearAttentionNorm::kLayerNorm;
    case recipes::LinearAttention::RMS_NORM:
      return nn::LinearAttentionNorm::kRmsNorm;
    case recipes::LinearAttention::DENOMINATOR:
      return nn::LinearAttentionNorm::kDenominator;
    case recipes::LinearAttention::GROUP_NORM:
      return nn::LinearAttentionNorm::kGroupNorm;
  }
  return nn::LinearAttentionNorm::kLayerNorm;
}

backend::LrpePairing pairing_of(recipes::Pairing p) {
  return p == recipes::HALF ? backend::LrpePairing::kHalf : backend::LrpePairing::kAdjacent;
}

/// The recipe's LRPE block: Type, pairing, P (HOUSEHOLDER_FROZEN = Householder P whose vector is
/// not trained), θ mode and base.
nn::LrpeOptions lrpe_of(const recipes::Lrpe& l) {
  nn::LrpeOptions o;
  o.core = l.type() == 1   ? backend::LrpeCore::kUnitary
           : l.type() == 3 ? backend::LrpeCore::kPermutation
                           : backend::LrpeCore::kOrthogonal;
  o.pairing = pairing_of(l.pairing());
  switch (l.p()) {
    case recipes::Lrpe::IDENTITY:
      o.p = backend::LrpeP::kIdentity;
      break;
    case recipes::Lrpe::HOUSEHOLDER:
      o.p = backend::LrpeP::kHouseholder;
      o.learn_householder = true;
      break;
    case recipes::Lrpe::HOUSEHOLDER_FROZEN:
      o.p = backend::LrpeP::kHouseholder;
      o.learn_householder = false;
      break;
    case recipes::Lrpe::ODD_EVEN:
      o.p = backend::LrpeP::kOddEven;
      break;
  }
  o.learn_theta = l.learn_theta();
  o.theta_base = l.theta_base();
  return o;
}

/// RoPE's θ rescaling (model.position.rope.scaling).
nn::RopeScaling rope_scaling_of(const recipes::Rope& rope) {
  nn::RopeScaling o;
  if (!rope.has_scaling()) return o;
  const recipes::RopeScaling& s = rope.scaling();
  switch (s.kind_case()) {
    case recipes::RopeScaling::kLinear:
      o.kind = nn::RopeScaling::Kind::kLinear;
      o.factor = s.linear().factor();
      break;
    case recipes::RopeScaling::kLlama3:
      o.kind = nn::RopeScaling::Kind::kLlama3;
      o.factor = s.llama3().factor();
      o.low_freq_factor = s.llama3().low_freq_factor();
      o.high_freq_factor = s.llama3().high_freq_factor();
      o.original_max_positions = s.llama3().original_max_positions();
      break;
    case recipes::RopeScaling::KIND_NOT_SET:
      break;
  }
  return o;
}

/// The recipe's `model.position` oneof as the typed encoding; nullopt when none is chosen. Which
/// attention family accepts it is checked by the callers.
std::optional<nn::PositionEncoding> position_of(const recipes::Position& p) {
  switch (p.encoding_case()) {
    case recipes::Position::kNone:
      return nn::NoPosition{};
    case recipes::Position::kSinusoidal:
      return nn::SinusoidalPosition{p.sinusoidal().base()};
    case recipes::Position::kLearnedAbsolute:
      return nn::LearnedPosition{p.learned_absolute().max_positions()};
    case recipes::Position::kRope:
      return nn::RopePosition{pairing_of(p.rope().pairing()), p.rope().base(),
                              rope_scaling_of(p.rope())};
    case recipes::Position::kLrpe:
      return lrpe_of(p.lrpe());
    case recipes::Position::kPermuteFormer:
      return nn::PermuteFormerPosition{};
    case recipes::Position::kAlibi:
      return nn::AlibiPosition{};
    case recipes::Position::kT5: {
      const recipes::T5& t5 = p.t5();
      nn::T5Position o;
      o.buckets = t5.buckets();
      o.max_distance = t5.max_distance();
      if (t5.has_bidirectional()) o.bidirectional = t5.bidirectional();
      return o;
    }
    case recipes::Position::kShaw: {
      const recipes::Shaw& shaw = p.shaw();
      nn::ShawPosition o;
      o.clip = shaw.clip();
      if (shaw.has_clip_left()) o.clip_left = shaw.clip_left();
      if (shaw.has_clip_right()) o.clip_right = shaw.clip_right();
      o.values = shaw.values();
      return o;
    }
    case recipes::Position::kTransformerXl: {
      const recipes::TransformerXl& xl = p.transformer_xl();
      nn::TransformerXlPosition o;
      o.pe_dim = xl.has_pe_width() ? xl.pe_width() : 0;
      o.layout = xl.layout() == recipes::TransformerXl::CONCATENATED
                     ? nn::SinusoidLayout::kConcatenated
                     : nn::SinusoidLayout::kInterleaved;
      o.base = xl.base();
      return o;
    }
    case recipes::Position::kSkew:
      return nn::SkewPosition{p.skew().max_len(), p.skew().per_head()};
    case recipes::Position::ENCODING_NOT_SET:
      break;
  }
  return std::nullopt;
}

/// The recipe's linear attention settings (`path` names it in messages).
void set_linear_attention(const recipes::LinearAttention& la, nn::LinearAttentionOptions& a) {
  a.feature_map = feature_map_of(la.feature_map());
  a.norm = norm_of(la.normalization());
  a.denominator_eps = la.denominator_eps();
  a.chunk_size = la.chunk_size();
  if (la.has_decay()) {
    a.decay.schedule = la.decay().schedule() == recipes::Decay::TRANSNORMER
                           ? nn::DecaySchedule::kTransNormer
                           : nn::DecaySchedule::kRetNet;
    a.decay.learnable = la.decay().learnable();
  }
  if (la.gating().has_gla()) {
    a.state_gate.gating = nn::StateGating::kGla;
    a.state_gate.gla_rank = la.gating().gla().rank();
    a.state_gate.gla_temperature = la.gating().gla().temperature();
  } else if (la.gating().has_ssd()) {
    a.state_gate.gating = nn::StateGating::kSsd;
  }
  a.state_gate.rule = la.update_rule() == recipes::LinearAttention::DELTA
                          ? nn::UpdateRule::kDelta
                          : nn::UpdateRule::kAdditive;
  switch (la.output_gate()) {
    case recipes::LinearAttention::NO_GATE:
      a.output_gate = nn::OutputGate::kNone;
      break;
    case recipes::LinearAttention::SWISH_GATE:
      a.output_gate = nn::OutputGate::kSwish;
      break;
    case recipes::LinearAttention::SIGMOID_GATE:
      a.output_gate = nn::OutputGate::kSigmoid;
      break;
  }
}

/// The recipe's softmax attention settings (scale, dropout, streaming, window).
void set_softmax_attention(const recipes::SoftmaxAttention& sa, models::SoftmaxModelOptions& s) {
  if (sa.has_scale()) s.scale = sa.scale();
  s.dropout = sa.dropout();
  if (sa.has_streaming()) {
    s.stream_chunk = sa.streaming().chunk();
    s.stream_left_memory = sa.streaming().left_memory();
  }
  if (sa.has_window()) s.window = sa.window();
}

/// The encoding at `path` (model.position or model.hybrid.position) for blocks of `family`;
/// the encodings of the other family are refused, naming the field.
nn::PositionEncoding position_for(const recipes::Position& p, models::AttentionFamily family,
                                  const std::string& path) {
  const std::optional<nn::PositionEncoding> position = position_of(p);
  if (!position) fail("{}: no positional encoding chosen (none {{}} is NoPE)", path);
  if (family == models::AttentionFamily::kLinear) {
    if (!nn::applies_to_linear(*position)) {
      fail(
          "{}: this encoding applies to softmax attention only, and these blocks use linear "
          "attention",
          path);
    }
    return *position;
  }
  switch (p.encoding_case()) {
    case recipes::Position::kLrpe:
      fail(
          "{}.lrpe: LRPE acts on linear-attention features, and these blocks use softmax "
          "attention; use attention {{ linear {{}} }} or a softmax encoding (rope, shaw, "
          "transformer_xl, skew, t5, alibi)",
          path);
    case recipes::Position::kPermuteFormer:
      fail(
          "{}.permute_former: PermuteFormer acts on linear-attention features, and these blocks "
          "use softmax attention; use attention {{ linear {{}} }} or a softmax encoding (rope, "
          "shaw, transformer_xl, skew, t5, alibi)",
          path);
    default:
      return *position;
  }
}

/// One attention (model.attention or model.hybrid.attention): its family and settings.
models::AttentionFamily set_attention(const recipes::Attention& attention,
                                      nn::LinearAttentionOptions& linear,
                                      models::SoftmaxModelOptions& softmax) {
  if (attention.has_softmax()) {
    set_softmax_attention(attention.softmax(), softmax);
    return models::AttentionFamily::kSoftmax;
  }
  set_linear_attention(attention.linear(), linear);
  return models::AttentionFamily::kLinear;
}

/// model.hybrid: the selected blocks (the union of `every` and `blocks`), their attention and
/// their position (model.hybrid.position, or model.position when it is absent).
models::HybridOptions hybrid_of(const recipes::Model& m, const models::ModelOptions& o) {
  const recipes::Hybrid& h = m.hybrid();
  if (m.layers() < 2) {
    fail("model.hybrid: a hybrid stack needs model.layers >= 2 (got {})", m.layers());
  }
  std::set<int64_t> blocks;
  if (h.has_every()) {
    if (h.every() < 2) fail("model.hybrid.every: must be >= 2 (got {})", h.every());
    for (int64_t i = h.every() - 1; i < m.layers(); i += h.every()) blocks.insert(i);
  }
  for (int i = 0; i < h.blocks_size(); ++i) {
    if (h.blocks(i) < 0 || h.blocks(i) >= m.layers()) {
      fail("model.hybrid.blocks[{}]: block {} is not in [0, {})", i, h.blocks(i), m.layers());
    }
    if (!blocks.insert(h.blocks(i)).second && !h.has_every()) {
      fail("model.hybrid.blocks[{}]: block {} is listed twice", i, h.blocks(i));
    }
  }
  if (blocks.empty()) fail("model.hybrid: selects no block (set every, blocks or both)");
  if (static_cast<int64_t>(blocks.size()) == m.layers()) {
    fail("model.hybrid: selects every block; set model.attention (and model.position) instead");
  }
  if (!h.has_attention() || h.attention().kind_case() == recipes::Attention::KIND_NOT_SET) {
    fail("model.hybrid.attention: required (linear {{}} or softmax {{}})");
  }
  models::HybridOptions out;
  out.blocks.assign(blocks.begin(), blocks.end());
  out.attention = o.attention;  // norm_eps and the defaults of the model's layer
  out.attention_family = set_attention(h.attention(), out.attention, out.softmax);
  if (h.has_position()) {
    const recipes::Position& p = h.position();
    if (p.has_sinusoidal() || p.has_learned_absolute()) {
      fail(
          "model.hybrid.position: absolute encodings are added to the embeddings once for the "
          "whole stack; set them in model.position");
    }
    out.position = position_for(p, out.attention_family, "model.hybrid.position");
  } else {
    out.position = position_for(m.position(), out.attention_family,
                                "model.hybrid.position (absent, so model.position)");
  }
  if (std::holds_alternative<nn::T5Position>(out.position) ||
      std::holds_alternative<nn::T5Position>(o.position)) {
    fail(
        "model.hybrid: T5 shares one bias table across the stack and cannot be used in a "
        "hybrid stack");
  }
  if (o.softmax.stream_chunk > 0 || out.softmax.stream_chunk > 0) {
    fail("model.hybrid: streaming chunk visibility is not supported in a hybrid stack");
  }
  return out;
}

}  // namespace

models::ModelOptions model_options_from_recipe(const recipes::Recipe& recipe, int64_t vocab_size) {
  const recipes::Model& m = recipe.model();
  models::ModelOptions o;
  switch (m.kind()) {
    case recipes::Model::CAUSAL_LM:
      o.kind = models::ModelKind::kCausalLm;
      break;
    case recipes::Model::MASKED_LM:
      o.kind = models::ModelKind::kMaskedLm;
      break;
    case recipes::Model::CLASSIFIER:
      o.kind = models::ModelKind::kClassifier;
      break;
  }
  o.vocab_size = vocab_size;
  if (m.has_vocab_size()) {
    if (m.vocab_size() < vocab_size) {
      throw recipes::RecipeError(fmt::format(
          "model.vocab_size {} is less than the tokenizer's {} ids: every id needs an embedding "
          "row (leave model.vocab_size out to use the tokenizer's size)",
          m.vocab_size(), vocab_size));
    }
    o.vocab_size = m.vocab_size();
  }
  o.dim = m.width();
  o.layers = m.layers();
  o.heads = m.heads();
  o.activation = activation_of(m.ffn_activation());
  o.ffn_dim = m.has_ffn_width() ? m.ffn_width() : recipes::default_ffn_width(m);
  o.norm_kind =
      m.norm_kind() == recipes::Model::RMS_NORM ? nn::NormKind::kRmsNorm : nn::NormKind::kLayerNorm;
  o.bias = m.bias();
  if (m.has_biases()) {
    const recipes::Biases& b = m.biases();
    if (b.has_qkv()) o.biases.qkv = b.qkv();
    if (b.has_attention_out()) o.biases.attention_out = b.attention_out();
    if (b.has_ffn()) o.biases.ffn = b.ffn();
    if (b.has_norms()) o.biases.norms = b.norms();
  }
  o.kv_heads = m.has_kv_heads() ? m.kv_heads() : 0;
  o.norm_placement = m.norm_placement() == recipes::Model::POST_NORM ? models::NormPlacement::kPost
                                                                     : models::NormPlacement::kPre;
  o.final_norm = m.final_norm();
  o.norm_eps = m.norm_eps();
  o.attention.norm_eps = m.norm_eps();
  o.dropout = m.dropout();
  o.scale_embeddings = m.embedding_scale() == recipes::Model::SQRT_WIDTH;
  o.tie_embeddings = m.tie_embeddings();
  o.recompute_blocks = recipe.train().recompute_blocks();
  o.segment_length = recipe.train().segment_length();
  o.init_scheme = init_scheme_of(m.init_scheme());
  o.init_std = m.init_std();
  o.attention_family = set_attention(m.attention(), o.attention, o.softmax);
  o.position = position_for(m.position(), o.attention_family, "model.position");
  if (m.has_hybrid()) o.hybrid = hybrid_of(m, o);
  o.add_sinusoidal = m.position().add_sinusoidal();
  if (m.has_classifier()) {
    o.num_classes = m.classifier().num_classes();
    o.pooling = m.classifier().pooling() == recipes::Classifier::CLS ? models::Pooling::kFirstToken
                                                                     : models::Pooling::kMean;
  }
  return o;
}

}  // namespace rota::app
