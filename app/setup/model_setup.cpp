// Recipe → models::ModelOptions.
#include "app/setup/model_setup.h"

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
  }
  return nn::Activation::kGelu;
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
  }
  return nn::LinearAttentionNorm::kLayerNorm;
}

backend::LrpePairing pairing_of(recipes::Pairing p) {
  return p == recipes::HALF ? backend::LrpePairing::kHalf : backend::LrpePairing::kAdjacent;
}

nn::LrpeP p_of(recipes::Lrpe::PMatrix p) {
  switch (p) {
    case recipes::Lrpe::IDENTITY:
      return nn::LrpeP::kIdentity;
    case recipes::Lrpe::HOUSEHOLDER:
      return nn::LrpeP::kHouseholderLearnable;
    case recipes::Lrpe::HOUSEHOLDER_FROZEN:
      return nn::LrpeP::kHouseholderFrozen;
    case recipes::Lrpe::ODD_EVEN:
      return nn::LrpeP::kOddEven;
  }
  return nn::LrpeP::kHouseholderLearnable;
}

/// Linear attention and its position encoding (the softmax-only encodings are rejected).
void set_linear_attention(const recipes::Model& m, models::ModelOptions& o) {
  o.attention_family = models::AttentionFamily::kLinear;
  const recipes::LinearAttention& la = m.attention().linear();
  o.attention.feature_map = feature_map_of(la.feature_map());
  o.attention.norm = norm_of(la.normalization());
  o.attention.denominator_eps = la.denominator_eps();
  o.attention.chunk_size = la.chunk_size();
  const recipes::Position& p = m.position();
  switch (p.encoding_case()) {
    case recipes::Position::kNone:
      o.position = nn::LinearPositionEncoding::kNone;
      break;
    case recipes::Position::kSinusoidal:
      o.position = nn::LinearPositionEncoding::kSinusoidal;
      o.sinusoidal_base = p.sinusoidal().base();
      break;
    case recipes::Position::kLearnedAbsolute:
      o.position = nn::LinearPositionEncoding::kLearned;
      o.max_positions = p.learned_absolute().max_positions();
      break;
    case recipes::Position::kRope:
      o.position = nn::LinearPositionEncoding::kLrpe;
      o.lrpe = nn::rope_options(o.dim / o.heads, pairing_of(p.rope().pairing()), p.rope().base());
      break;
    case recipes::Position::kLrpe: {
      o.position = nn::LinearPositionEncoding::kLrpe;
      const recipes::Lrpe& l = p.lrpe();
      o.lrpe.core = l.type() == 1   ? backend::LrpeCore::kUnitary
                    : l.type() == 3 ? backend::LrpeCore::kPermutation
                                    : backend::LrpeCore::kOrthogonal;
      o.lrpe.pairing = pairing_of(l.pairing());
      o.lrpe.p = p_of(l.p());
      o.lrpe.learn_theta = l.learn_theta();
      o.lrpe.theta_base = l.theta_base();
      break;
    }
    case recipes::Position::kPermuteFormer:
      o.position = nn::LinearPositionEncoding::kPermuteFormer;
      break;
    default:
      fail(
          "model.position: this encoding applies to softmax attention only, and this model "
          "uses linear attention");
  }
}

/// Softmax attention (scale, dropout, streaming) and its encoding (the linear-only encodings
/// are rejected, naming the field).
void set_softmax_attention(const recipes::Model& m, models::ModelOptions& o) {
  o.attention_family = models::AttentionFamily::kSoftmax;
  o.position = nn::LinearPositionEncoding::kNone;  // linear attention's field: unused
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
    case recipes::Position::kNone:
      s.encoding = "none";
      break;
    case recipes::Position::kSinusoidal:
      s.encoding = "sinusoidal";
      o.sinusoidal_base = p.sinusoidal().base();
      break;
    case recipes::Position::kLearnedAbsolute:
      s.encoding = "learned";
      o.max_positions = p.learned_absolute().max_positions();
      break;
    case recipes::Position::kRope:
      s.encoding = p.rope().pairing() == recipes::HALF ? "rope_half" : "rope";
      s.params.rope_base = p.rope().base();
      break;
    case recipes::Position::kShaw: {
      const recipes::Shaw& shaw = p.shaw();
      s.encoding = "shaw";
      s.params.shaw_clip = shaw.clip();
      s.params.shaw_values = shaw.values();
      s.shaw_clip_left = shaw.has_clip_left() ? shaw.clip_left() : -1;
      s.shaw_clip_right = shaw.has_clip_right() ? shaw.clip_right() : -1;
      break;
    }
    case recipes::Position::kTransformerXl: {
      const recipes::TransformerXl& xl = p.transformer_xl();
      s.encoding = "transformer_xl";
      s.params.xl_pe_dim = xl.has_pe_width() ? xl.pe_width() : 0;
      s.params.xl_layout = xl.layout() == recipes::TransformerXl::CONCATENATED
                               ? nn::SinusoidLayout::kConcatenated
                               : nn::SinusoidLayout::kInterleaved;
      s.xl_base = xl.base();
      break;
    }
    case recipes::Position::kSkew:
      s.encoding = "skew";
      s.params.skew_max_len = p.skew().max_len();
      s.params.skew_per_head = p.skew().per_head();
      break;
    case recipes::Position::kT5: {
      const recipes::T5& t5 = p.t5();
      s.encoding = "t5";
      s.params.t5_buckets = t5.buckets();
      s.params.t5_max_distance = t5.max_distance();
      if (t5.has_bidirectional()) s.t5_bidirectional = t5.bidirectional();
      break;
    }
    case recipes::Position::kAlibi:
      s.encoding = "alibi";
      break;
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
  o.ffn_dim = m.has_ffn_width() ? m.ffn_width() : 4 * m.width();
  o.activation = activation_of(m.ffn_activation());
  o.norm_placement =
      m.norm_placement() == recipes::Model::POST_NORM ? models::NormPlacement::kPost : models::NormPlacement::kPre;
  o.final_norm = m.final_norm();
  o.norm_eps = m.norm_eps();
  o.attention.norm_eps = m.norm_eps();
  o.dropout = m.dropout();
  o.scale_embeddings = m.embedding_scale() == recipes::Model::SQRT_WIDTH;
  o.tie_embeddings = m.tie_embeddings();
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
