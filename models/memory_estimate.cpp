// Analytic memory of a model (see memory_estimate.h).
#include "models/memory_estimate.h"

#include <algorithm>
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

/// Floats one token keeps per layer for the backward pass (or, inference, at most at once).
double floats_per_token_layer(const ModelOptions& o, int64_t sequence_length, bool training) {
  const double e = static_cast<double>(o.dim);
  const double f = static_cast<double>(o.ffn_dim);
  const auto* lrpe = std::get_if<nn::LrpeOptions>(&o.position);
  const double features =
      lrpe != nullptr && lrpe->core == backend::LrpeCore::kUnitary ? 2.0 * e : e;
  double per_token = 0;
  if (training) {
    // Saved tensors: two norm outputs, q/k/v, the q/k features (and their φ inputs), the
    // attention output, its norm and projection, residuals, the FFN hidden and activation.
    per_token = 12.0 * e + 4.0 * features + 3.0 * f;
    // An output gate keeps its pre-activation and the gated product.
    if (!is_softmax(o) && o.attention.output_gate != nn::OutputGate::kNone) per_token += 2.0 * e;
  } else {
    per_token = 6.0 * e + 2.0 * features + 2.0 * f;  // the widest layer's live tensors
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

}  // namespace

double parameter_count(const ModelOptions& o) {
  const double e = static_cast<double>(o.dim);
  const double f = static_cast<double>(o.ffn_dim);
  const double v = static_cast<double>(o.vocab_size);
  double count = v * e;  // token embeddings
  if (const auto* learned = std::get_if<nn::LearnedPosition>(&o.position)) {
    count += static_cast<double>(learned->max_positions) * e;
  }
  for (int64_t i = 0; i < o.layers; ++i) {
    const ModelOptions b = block_options(o, i);  // a hybrid's blocks differ
    double block = 4.0 * e;                      // ln1, ln2
    block += 4.0 * (e * e + e);                  // q, k, v, out projections
    block += e * f + f + f * e + e;              // FFN
    block += position_parameters(b);
    if (!is_softmax(b)) {
      if (b.attention.norm == nn::LinearAttentionNorm::kLayerNorm) block += 2.0 * e;
      if (b.attention.norm == nn::LinearAttentionNorm::kRmsNorm) block += e;
      if (b.attention.norm == nn::LinearAttentionNorm::kGroupNorm) block += 2.0 * e;
      if (b.attention.output_gate != nn::OutputGate::kNone) block += e * e + e;  // gate_proj
    }
    count += block;
  }
  if (is_softmax(o) && o.layers > 0) {
    if (const auto* t5 = std::get_if<nn::T5Position>(&o.position)) {
      count += static_cast<double>(t5->buckets) * static_cast<double>(o.heads);
    }
  }
  if (o.final_norm && o.norm_placement == NormPlacement::kPre) count += 2.0 * e;
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

MemoryEstimate training_memory(const ModelOptions& o, int64_t batch, int64_t sequence_length) {
  MemoryEstimate m;
  m.parameters = parameter_count(o);
  m.parameter_bytes = 4.0 * m.parameters;
  // Gradients (f32) and two AdamW moments; bf16 runs also keep bf16 copies of the weights.
  m.state_bytes = m.parameters * (4.0 + 8.0 + (o.dtype == DType::kBF16 ? 2.0 : 0.0));
  const double tokens = static_cast<double>(batch) * static_cast<double>(sequence_length);
  const double bytes = o.dtype == DType::kBF16 ? 2.0 : 4.0;
  double layers = 0;  // Σ over blocks (a hybrid's blocks differ)
  for (int64_t i = 0; i < o.layers; ++i) {
    layers += floats_per_token_layer(block_options(o, i), sequence_length, true);
  }
  // Plus the embeddings, the final norm and the loss rows outside the blocks.
  const double outside = 4.0 * static_cast<double>(o.dim);
  m.activation_bytes = tokens * bytes * (layers + outside);
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
