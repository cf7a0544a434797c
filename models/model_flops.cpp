// Analytic training FLOPs per token (see model_flops.h).
#include "models/model_flops.h"

#include <algorithm>
#include <variant>

namespace rota::models {

namespace {

/// Forward FLOPs per token of one block (options from block_options()).
double block_forward_flops(const ModelOptions& o, int64_t sequence_length) {
  const double e = static_cast<double>(o.dim);
  const double f = static_cast<double>(o.ffn_dim);
  const double heads = static_cast<double>(o.heads);
  const double d = e / heads;
  const bool causal = o.kind == ModelKind::kCausalLm;
  // The four attention projections E×E (five with an output gate; with grouped-query attention
  // k and v are H_kv·D × E) and the FFN's two E×F matrices, or three for a gated FFN (W_gate,
  // W_up, W_down).
  const bool output_gate = o.attention_family == AttentionFamily::kLinear &&
                           o.attention.output_gate != nn::OutputGate::kNone;
  const double kv_share = o.attention_family == AttentionFamily::kSoftmax && o.kv_heads > 0
                              ? static_cast<double>(o.kv_heads) / heads
                              : 1.0;
  const double projections = (output_gate ? 3.0 : 2.0) + 2.0 * kv_share;
  const double ffn_matrices = nn::is_gated(o.activation) ? 3.0 : 2.0;
  double dense = 2.0 * (projections * e * e + ffn_matrices * e * f);
  double attention = 0;
  const double n = static_cast<double>(sequence_length);
  if (o.attention_family == AttentionFamily::kSoftmax) {
    // Keys each query sees on average: N (bidirectional), (N + 1)/2 ≈ N/2 (causal), and with a
    // sliding window W: Σ_i min(i + 1, W) / N = W − W(W − 1)/(2N) for W <= N.
    double keys = causal ? 0.5 * n : n;
    if (causal && o.softmax.window > 0 && static_cast<double>(o.softmax.window) < n) {
      const double w = static_cast<double>(o.softmax.window);
      keys = w - w * (w - 1.0) / (2.0 * n);
    }
    attention = 4.0 * keys * d;
  } else {
    const auto* lrpe = std::get_if<nn::LrpeOptions>(&o.position);
    const bool doubled = (lrpe != nullptr && lrpe->core == backend::LrpeCore::kUnitary) ||
                         o.attention.feature_map == nn::FeatureMap::kHedgehog;
    const double features = doubled ? 2.0 * d : d;
    const double chunk = std::min<double>(static_cast<double>(o.attention.chunk_size), n);
    attention = causal ? 2.0 * chunk * features + 4.0 * features * d : 4.0 * features * d;
  }
  if (o.attention_family == AttentionFamily::kLinear) {
    // The state gate's projections: GLA's E×r and r×H·F', Mamba-2's Δ and the delta rule's β
    // (E×H each).
    const auto* lrpe = std::get_if<nn::LrpeOptions>(&o.position);
    const bool doubled = (lrpe != nullptr && lrpe->core == backend::LrpeCore::kUnitary) ||
                         o.attention.feature_map == nn::FeatureMap::kHedgehog;
    const double features = doubled ? 2.0 * d : d;
    const nn::StateGateOptions& g = o.attention.state_gate;
    double gate = 0;
    // The hedgehog feature map's per-head D×D projections of q and k.
    if (o.attention.feature_map == nn::FeatureMap::kHedgehog) gate += 2.0 * e * d;
    if (g.gating == nn::StateGating::kGla) {
      const double r = static_cast<double>(g.gla_rank);
      gate += e * r + r * heads * features;
    } else if (g.gating == nn::StateGating::kSsd) {
      gate += e * heads;
    }
    if (g.rule == nn::UpdateRule::kDelta) gate += e * heads;
    dense += 2.0 * gate;
  }
  return dense + heads * attention;
}

}  // namespace

double training_flops_per_token(const ModelOptions& o, int64_t sequence_length) {
  const double e = static_cast<double>(o.dim);
  const double v = static_cast<double>(o.vocab_size);
  double forward = 0;
  for (int64_t i = 0; i < o.layers; ++i) {
    forward += block_forward_flops(block_options(o, i), sequence_length);
  }
  if (o.kind == ModelKind::kClassifier) {
    forward += 2.0 * e * static_cast<double>(o.num_classes) / static_cast<double>(sequence_length);
  } else {
    forward += 2.0 * v * e;
  }
  return 3.0 * forward;
}

}  // namespace rota::models
