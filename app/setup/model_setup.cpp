// Recipe → models::ModelOptions.
#include "app/setup/model_setup.h"

#include <optional>

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
      return nn::RopePosition{pairing_of(p.rope().pairing()), p.rope().base()};
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

/// Linear attention and its position encoding (the softmax-only encodings are rejected).
void set_linear_attention(const recipes::Model& m, models::ModelOptions& o) {
  o.attention_family = models::AttentionFamily::kLinear;
  const recipes::LinearAttention& la = m.attention().linear();
  o.attention.feature_map = feature_map_of(la.feature_map());
  o.attention.norm = norm_of(la.normalization());
  o.attention.denominator_eps = la.denominator_eps();
  o.attention.chunk_size = la.chunk_size();
  if (la.has_decay()) {
    o.attention.decay.schedule = la.decay().schedule() == recipes::Decay::TRANSNORMER
                                     ? nn::DecaySchedule::kTransNormer
                                     : nn::DecaySchedule::kRetNet;
    o.attention.decay.learnable = la.decay().learnable();
  }
  if (la.gating().has_gla()) {
    o.attention.state_gate.gating = nn::StateGating::kGla;
    o.attention.state_gate.gla_rank = la.gating().gla().rank();
    o.attention.state_gate.gla_temperature = la.gating().gla().temperature();
  } else if (la.gating().has_ssd()) {
    o.attention.state_gate.gating = nn::StateGating::kSsd;
  }
  o.attention.state_gate.rule = la.update_rule() == recipes::LinearAttention::DELTA
                                    ? nn::UpdateRule::kDelta
                                    : nn::UpdateRule::kAdditive;
  switch (la.output_gate()) {
    case recipes::LinearAttention::NO_GATE:
      o.attention.output_gate = nn::OutputGate::kNone;
      break;
    case recipes::LinearAttention::SWISH_GATE:
      o.attention.output_gate = nn::OutputGate::kSwish;
      break;
    case recipes::LinearAttention::SIGMOID_GATE:
      o.attention.output_gate = nn::OutputGate::kSigmoid;
      break;
  }
  const std::optional<nn::PositionEncoding> position = position_of(m.position());
  if (!position || !nn::applies_to_linear(*position)) {
    fail(
        "model.position: this encoding applies to softmax attention only, and this model "
        "uses linear attention");
  }
  o.position = *position;
}

/// Softmax attention (scale, dropout, streaming) and its encoding (the linear-only encodings
/// are rejected, naming the field).
void set_softmax_attention(const recipes::Model& m, models::ModelOptions& o) {
  o.attention_family = models::AttentionFamily::kSoftmax;
  const recipes::SoftmaxAttention& sa = m.attention().softmax();
  models::SoftmaxModelOptions& s = o.softmax;
  if (sa.has_scale()) s.scale = sa.scale();
  s.dropout = sa.dropout();
  if (sa.has_streaming()) {
    s.stream_chunk = sa.streaming().chunk();
    s.stream_left_memory = sa.streaming().left_memory();
  }
  const recipes::Position& p = m.position();
  switch (p.encoding_case()) {
    case recipes::Position::kLrpe:
      fail(
          "model.position.lrpe: LRPE acts on linear-attention features, and this model uses "
          "softmax attention (model.attention.softmax); use attention {{ linear {{}} }} or a "
          "softmax encoding (rope, shaw, transformer_xl, skew, t5, alibi)");
    case recipes::Position::kPermuteFormer:
      fail(
          "model.position.permute_former: PermuteFormer acts on linear-attention features, and "
          "this model uses softmax attention (model.attention.softmax); use attention {{ linear "
          "{{}} }} or a softmax encoding (rope, shaw, transformer_xl, skew, t5, alibi)");
    case recipes::Position::ENCODING_NOT_SET:
      fail("model.position: no positional encoding chosen (none {{}} is NoPE)");
    default:
      o.position = *position_of(p);
  }
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
  o.dim = m.width();
  o.layers = m.layers();
  o.heads = m.heads();
  o.activation = activation_of(m.ffn_activation());
  o.ffn_dim = m.has_ffn_width() ? m.ffn_width() : recipes::default_ffn_width(m);
  o.norm_kind =
      m.norm_kind() == recipes::Model::RMS_NORM ? nn::NormKind::kRmsNorm : nn::NormKind::kLayerNorm;
  o.bias = m.bias();
  o.norm_placement = m.norm_placement() == recipes::Model::POST_NORM ? models::NormPlacement::kPost
                                                                     : models::NormPlacement::kPre;
  o.final_norm = m.final_norm();
  o.norm_eps = m.norm_eps();
  o.attention.norm_eps = m.norm_eps();
  o.dropout = m.dropout();
  o.scale_embeddings = m.embedding_scale() == recipes::Model::SQRT_WIDTH;
  o.tie_embeddings = m.tie_embeddings();
  o.init_scheme = init_scheme_of(m.init_scheme());
  o.init_std = m.init_std();
  if (m.attention().has_softmax()) {
    set_softmax_attention(m, o);
  } else {
    set_linear_attention(m, o);
  }
  o.add_sinusoidal = m.position().add_sinusoidal();
  if (m.has_classifier()) {
    o.num_classes = m.classifier().num_classes();
    o.pooling = m.classifier().pooling() == recipes::Classifier::CLS ? models::Pooling::kFirstToken
                                                                     : models::Pooling::kMean;
  }
  return o;
}

}  // namespace rota::app
