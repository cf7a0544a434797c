// Analytic memory of a model (see memory_estimate.h).
#include "models/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <variant>

namespace rota::models {

namespace {

bool is_softmax(const ModelOptions& o) {
  return o.attention_family == AttentionFamily::kSoftmax;
}

/// Parameters of one block's positional encoding (T5's table is per stack, counted apart).
double position_parameters(const ModelOptions& o) {
  const double e = static_cast<double>(o.dim);
  const double d = e / static_cast<double>(o.heads);
  const int64_t head_dim = o.dim / o.heads;
  if (const auto* lrpe = std::get_if<nn::LrpeOptions>(&o.position)) {
    double count = 0;
    if (lrpe->core == backend::LrpeCore::kUnitary) count += d;
    if (lrpe->core == backend::LrpeCore::kOrthogonal) count += static_cast<double>(head_dim / 2);
    if (lrpe->p == backend::LrpeP::kHouseholder) count += d;
    return count;
  }
  if (std::holds_alternative<nn::RopePosition>(o.position)) {
    return static_cast<double>(head_dim / 2);  // the frozen θ
  }
  if (!is_softmax(o)) return 0;
  if (const auto* shaw = std::get_if<nn::ShawPosition>(&o.position)) {
    const double rows = static_cast<double>(shaw->clip_left.value_or(shaw->clip) +
                                            shaw->clip_right.value_or(shaw->clip) + 1);
    return rows * d * (shaw->values ? 2.0 : 1.0);
  }
  if (const auto* xl = std::get_if<nn::TransformerXlPosition>(&o.position)) {
    const double pe = xl->pe_dim > 0 ? static_cast<double>(xl->pe_dim) : e;
    return pe * e + 2.0 * e;  // linear_pos and the u, v biases
  }
  if (const auto* skew = std::get_if<nn::SkewPosition>(&o.position)) {
    const double rows = 2.0 * static_cast<double>(skew->max_len) - 1.0;
    return rows * d * (skew->per_head ? static_cast<double>(o.heads) : 1.0);
  }
  return 0;
}

/// Attention features per query/key element: 2 for LRPE Type 1 (cos and sin) and the hedgehog
/// feature map (softmax both ways), else 1.
double feature_factor(const ModelOptions& o) {
  if (is_softmax(o)) return 1.0;
  if (o.attention.feature_map == nn::FeatureMap::kHedgehog) return 2.0;
  const auto* lrpe = std::get_if<nn::LrpeOptions>(&o.position);
  return lrpe != nullptr && lrpe->core == backend::LrpeCore::kUnitary ? 2.0 : 1.0;
}

/// Parameters of one block's state gate (GLA, SSD, delta rule's β, a learnable decay).
double state_gate_parameters(const ModelOptions& o) {
  if (is_softmax(o)) return 0;
  const double e = static_cast<double>(o.dim);
  const double h = static_cast<double>(o.heads);
  const double f = (e / h) * feature_factor(o);
  const nn::StateGateOptions& g = o.attention.state_gate;
  double count = 0;
  if (g.gating == nn::StateGating::kGla) {
    const double r = static_cast<double>(g.gla_rank);
    count += e * r + r * h * f + h * f;  // gate_down, gate_up (+ bias)
  } else if (g.gating == nn::StateGating::kSsd) {
    count += e * h + 2.0 * h;  // dt_proj, dt_bias, a_log
  }
  if (g.rule == nn::UpdateRule::kDelta) count += e * h + h;  // beta_proj
  if (o.attention.decay.learnable && o.attention.decay.schedule != nn::DecaySchedule::kNone) {
    count += h;  // decay_log_rate
  }
  return count;
}

/// Floats one token keeps per layer for the backward pass (or, inference, at most at once).
double floats_per_token_layer(const ModelOptions& o, int64_t sequence_length, bool training) {
  const double e = static_cast<double>(o.dim);
  const double f = static_cast<double>(o.ffn_dim);
  const double features = feature_factor(o) * e;
  // A gated FFN (SwiGLU, GeGLU) keeps [gate | up] (2F) where the plain one keeps its
  // pre-activation (F): one F more.
  const double gated = nn::is_gated(o.activation) ? f : 0.0;
  double per_token = 0;
  if (training) {
    // Saved tensors: two norm outputs, q/k/v, the q/k features (and their φ inputs), the
    // attention output, its norm and projection, residuals, the FFN hidden and activation.
    per_token = 12.0 * e + 4.0 * features + 3.0 * f + gated;
    // An output gate keeps its pre-activation and the gated product.
    if (!is_softmax(o) && o.attention.output_gate != nn::OutputGate::kNone) per_token += 2.0 * e;
  } else {
    per_token = 6.0 * e + 2.0 * features + 2.0 * f + gated;  // the widest layer's live tensors
  }
  if (is_softmax(o)) {
    // Scores and probabilities, [H, N] per query (saved for backward, or live in inference);
    // [H, W] with a sliding window W.
    const int64_t keys =
        o.softmax.window > 0 ? std::min(o.softmax.window, sequence_length) : sequence_length;
    per_token += 2.0 * static_cast<double>(o.heads) * static_cast<double>(keys);
  }
  return per_token;
}

/// Floats of one block's carried attention state per sequence: H × F × D' (D' = D + 1 with the
/// denominator).
double state_floats(const ModelOptions& o) {
  const double d = static_cast<double>(o.dim / std::max<int64_t>(o.heads, 1));
  const double f = feature_factor(o) * d;
  const double columns = o.attention.norm == nn::LinearAttentionNorm::kDenominator ? d + 1.0 : d;
  return static_cast<double>(o.heads) * f * columns;
}

}  // namespace

double parameter_count(const ModelOptions& o) {
  const double e = static_cast<double>(o.dim);
  const double f = static_cast<double>(o.ffn_dim);
  const double v = static_cast<double>(o.vocab_size);
  double count = v * e;  // token embeddings
  if (const auto* learned = std::get_if<nn::LearnedPosition>(&o.position)) {
    count += static_cast<double>(learned->max_positions) * e;
  }
  const double qkv_bias = o.qkv_bias() ? 1.0 : 0.0, out_bias = o.attention_out_bias() ? 1.0 : 0.0;
  const double ffn_bias = o.ffn_bias() ? 1.0 : 0.0, norm_bias = o.norm_bias() ? 1.0 : 0.0;
  // A block norm: γ, plus β for a LayerNorm with biases.
  const double norm = o.norm_kind == nn::NormKind::kLayerNorm ? (1.0 + norm_bias) * e : e;
  for (int64_t i = 0; i < o.layers; ++i) {
    const ModelOptions b = block_options(o, i);  // a hybrid's blocks differ
    double block = 2.0 * norm;                   // ln1, ln2
    // q and out [E, E]; k and v [H_kv·D, E] (grouped-query attention in softmax blocks)
    const double kv_width =
        is_softmax(b) && b.kv_heads > 0 ? e / static_cast<double>(b.heads) * b.kv_heads : e;
    block += e * e + qkv_bias * e + 2.0 * (kv_width * e + qkv_bias * kv_width);
    block += e * e + out_bias * e;
    if (nn::is_gated(b.activation)) {
      block += 3.0 * e * f + ffn_bias * (2.0 * f + e);  // gate_proj, up_proj, down_proj
    } else {
      block += 2.0 * e * f + ffn_bias * (f + e);  // fc1, fc2
    }
    block += position_parameters(b);
    if (!is_softmax(b)) {
      if (b.attention.norm == nn::LinearAttentionNorm::kLayerNorm) block += (1.0 + norm_bias) * e;
      if (b.attention.norm == nn::LinearAttentionNorm::kRmsNorm) block += e;
      if (b.attention.norm == nn::LinearAttentionNorm::kGroupNorm) block += (1.0 + norm_bias) * e;
      if (b.attention.output_gate != nn::OutputGate::kNone) block += e * e + qkv_bias * e;
      block += state_gate_parameters(b);
      // The hedgehog feature map: W [H, D, D] and b [H, D].
      if (b.attention.feature_map == nn::FeatureMap::kHedgehog) block += e * (e / b.heads) + e;
    }
    count += block;
  }
  if (is_softmax(o) && o.layers > 0) {
    if (const auto* t5 = std::get_if<nn::T5Position>(&o.position)) {
      count += static_cast<double>(t5->buckets) * static_cast<double>(o.heads);
    }
  }
  if (o.final_norm && o.norm_placement == NormPlacement::kPre) count += norm;
  switch (o.kind) {
    case ModelKind::kCausalLm:
      if (!o.tie_embeddings) count += v * e;
      break;
    case ModelKind::kMaskedLm:
      count += 2.0 * e + v;  // mlm_norm, mlm_bias
      break;
    case ModelKind::kClassifier:
      count += e * static_cast<double>(o.num_classes) + static_cast<double>(o.num_classes);
      break;
  }
  return count;
}

MemoryEstimate with_trainable_parameters(MemoryEstimate m, double trainable, double added,
                                         DType dtype) {
  m.parameters += added;
  m.parameter_bytes = 4.0 * m.parameters;
  m.state_bytes = trainable * (4.0 + 8.0) + m.parameters * (dtype == DType::kBF16 ? 2.0 : 0.0);
  return m;
}

MemoryEstimate training_memory(const ModelOptions& o, int64_t batch, int64_t sequence_length) {
  MemoryEstimate m;
  m.parameters = parameter_count(o);
  m.parameter_bytes = 4.0 * m.parameters;
  // Gradients (f32) and two AdamW moments; bf16 runs also keep bf16 copies of the weights.
  m.state_bytes = m.parameters * (4.0 + 8.0 + (o.dtype == DType::kBF16 ? 2.0 : 0.0));
  if (o.segment_length > 0 && o.segment_length < sequence_length) {
    // One segment's activations at a time, plus every block's f32 state at each boundary (and
    // the one gradient of it carried back).
    MemoryEstimate segment = training_memory(
        [&] {
          ModelOptions whole = o;
          whole.segment_length = 0;
          return whole;
        }(),
        batch, o.segment_length);
    const double segments =
        std::ceil(static_cast<double>(sequence_length) / static_cast<double>(o.segment_length));
    const double states = (segments + 1.0) * static_cast<double>(batch) *
                          static_cast<double>(o.layers) * state_floats(o) * 4.0;
    m.activation_bytes = segment.activation_bytes + states;
    return m;
  }
  const double tokens = static_cast<double>(batch) * static_cast<double>(sequence_length);
  const double bytes = o.dtype == DType::kBF16 ? 2.0 : 4.0;
  double layers = 0;  // Σ over blocks (a hybrid's blocks differ)
  double widest = 0;  // the block that saves the most
  for (int64_t i = 0; i < o.layers; ++i) {
    const double block = floats_per_token_layer(block_options(o, i), sequence_length, true);
    layers += block;
    widest = std::max(widest, block);
  }
  // Plus the embeddings, the final norm and the loss rows outside the blocks.
  const double outside = 4.0 * static_cast<double>(o.dim);
  if (o.recompute_blocks) {
    // Every block's input (the f32 residual stream) is kept; one block's saved tensors exist at
    // a time, while it is recomputed and backpropagated.
    const double inputs = 4.0 * static_cast<double>(o.dim) * static_cast<double>(o.layers);
    m.activation_bytes = tokens * (inputs + bytes * (widest + outside));
  } else {
    m.activation_bytes = tokens * bytes * (layers + outside);
  }
  return m;
}

MemoryEstimate inference_memory(const ModelOptions& o, int64_t batch, int64_t sequence_length) {
  MemoryEstimate m;
  m.parameters = parameter_count(o);
  m.parameter_bytes = 4.0 * m.parameters;
  const double tokens = static_cast<double>(batch) * static_cast<double>(sequence_length);
  double widest = 0;  // the widest block's live tensors (a hybrid's blocks differ)
  for (int64_t i = 0; i < o.layers; ++i) {
    widest = std::max(widest, floats_per_token_layer(block_options(o, i), sequence_length, false));
  }
  m.activation_bytes = tokens * 4.0 * (widest + 4.0 * static_cast<double>(o.dim));
  return m;
}

}  // namespace rota::models
