// Linear attention layer: projections → φ → LRPE → fused kernel → norm → output projection.
#include "framework/nn/attention/linear_attention.h"

#include <algorithm>
#include <cmath>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/delta_rule_attention.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/gated_linear_attention.h"
#include "framework/autograd/ops/linear_attention.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/fused/delta_rule_attention.h"
#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/backend/fused/linear_attention.h"

namespace rota::nn {

LinearAttention::LinearAttention(const LinearAttentionOptions& options, Generator& gen)
    : options_(options) {
  const int64_t e = options.dim;
  ROTA_CHECK(e > 0 && options.heads > 0 && e % options.heads == 0,
             "LinearAttention: dim {} must be a positive multiple of heads {}", e, options.heads);
  ROTA_CHECK(options.chunk_size >= 1, "LinearAttention: chunk_size must be >= 1, got {}",
             options.chunk_size);
  ROTA_CHECK(applies_to_linear(options.position),
             "LinearAttention: positional encoding '{}' applies to softmax attention only; linear "
             "attention takes none, sinusoidal, learned_absolute (both added to the embeddings "
             "by the model), rope, lrpe or permute_former",
             position_encoding_name(options.position));
  const LinearOptions proj{e, e, options.qkv_bias, options.dtype, options.projection_init};
  q_proj_ = register_module("q_proj", std::make_shared<Linear>(proj, gen));
  k_proj_ = register_module("k_proj", std::make_shared<Linear>(proj, gen));
  v_proj_ = register_module("v_proj", std::make_shared<Linear>(proj, gen));
  out_proj_ = register_module(
      "out_proj",
      std::make_shared<Linear>(
          LinearOptions{e, e, options.output_bias, options.dtype, options.output_init}, gen));
  if (options.norm == LinearAttentionNorm::kLayerNorm) {
    layer_norm_ = register_module(
        "norm", std::make_shared<LayerNorm>(NormOptions{e, options.norm_eps.value_or(1e-5), true,
                                                        options.dtype, options.norm_bias}));
  } else if (options.norm == LinearAttentionNorm::kRmsNorm) {
    rms_norm_ =
        register_module("norm", std::make_shared<RMSNorm>(NormOptions{
                                    e, options.norm_eps.value_or(1e-6), true, options.dtype}));
  } else if (options.norm == LinearAttentionNorm::kGroupNorm) {
    group_norm_ = register_module("norm", std::make_shared<GroupNorm>(GroupNormOptions{
                                              e, options.heads, options.norm_eps.value_or(1e-5),
                                              options.dtype, options.norm_bias}));
  }
  if (options.output_gate != OutputGate::kNone) {
    gate_proj_ = register_module("gate_proj", std::make_shared<Linear>(proj, gen));
  }
  decay_rates_ = state_decay_rates(options.decay, options.heads);
  if (!decay_rates_.empty()) {
    ROTA_CHECK(options.causal,
               "LinearAttention: the '{}' decay is defined for causal attention only (RetNet and "
               "TransNormerLLM are decoders); a bidirectional layer takes no decay",
               decay_schedule_name(options.decay.schedule));
    ROTA_CHECK(!std::holds_alternative<PermuteFormerPosition>(options.position),
               "LinearAttention: permute_former brings its own per-head decay; it does not take "
               "the '{}' decay as well",
               decay_schedule_name(options.decay.schedule));
  }
  if (std::holds_alternative<PermuteFormerPosition>(options.position)) {
    permute_former_ = register_module(
        "permute_former", std::make_shared<PermuteFormer>(options.heads, head_dim(), gen));
  }
  std::optional<LrpeOptions> lrpe;
  if (const auto* rope = std::get_if<RopePosition>(&options.position)) {
    lrpe = rope_options(head_dim(), rope->pairing, rope->base, DType::kF32, rope->scaling);
  } else if (const auto* l = std::get_if<LrpeOptions>(&options.position)) {
    lrpe = *l;
  }
  if (lrpe) {
    lrpe->head_dim = head_dim();
    lrpe->dtype = options.dtype;
    lrpe_ = register_module("lrpe", std::make_shared<Lrpe>(*lrpe, gen));
  }
  if (options.feature_map == FeatureMap::kHedgehog) {
    ROTA_CHECK(!lrpe_ && !permute_former_,
               "LinearAttention: the hedgehog feature map takes no positional encoding on the "
               "features (rope, lrpe, permute_former): its 2D-wide softmax features are what "
               "attention transfer fits; use position none (or an absolute one)");
    hedgehog_ = register_module("feature_map", std::make_shared<HedgehogFeatureMap>(
                                                   options.heads, head_dim(), options.dtype));
  }
  StateGateOptions gate = options.state_gate;
  if (options.decay.learnable && !decay_rates_.empty()) {
    gate.learnable_decay = decay_rates_;  // the rates become parameters: the gated kernel
    decay_rates_.clear();
  }
  if (gate.gating != StateGating::kNone || gate.rule != UpdateRule::kAdditive ||
      !gate.learnable_decay.empty()) {
    ROTA_CHECK(options.causal,
               "LinearAttention: gating and the delta rule are defined for causal attention "
               "only (GLA, Mamba-2 and DeltaNet are decoders)");
    ROTA_CHECK(decay_rates_.empty() && !permute_former_,
               "LinearAttention: a data-dependent gate or the delta rule does not combine with "
               "a fixed decay or permute_former");
    ROTA_CHECK(options.norm != LinearAttentionNorm::kDenominator,
               "LinearAttention: gating, the delta rule and a learnable decay take norm = "
               "layer_norm, rms_norm or group_norm, not the denominator");
    state_gate_ = register_module(
        "state_gate", std::make_shared<StateGate>(gate, e, options.heads, feature_dim(),
                                                  options.projection_init, options.dtype, gen));
  }
  if (options.norm == LinearAttentionNorm::kDenominator) {
    // φ(q)·Σφ(k) is only a valid normaliser when every feature is >= 0; otherwise it can be
    // zero or negative and the output explodes.
    ROTA_CHECK(feature_map_is_nonnegative(options.feature_map),
               "LinearAttention: the denominator needs non-negative features, but feature map "
               "'{}' is signed; use norm = layer_norm or rms_norm",
               feature_map_name(options.feature_map));
    ROTA_CHECK(!lrpe_ || !lrpe_->makes_features_signed(),
               "LinearAttention: this positional encoding (LRPE rotations / Householder P) makes "
               "the features signed, so the denominator is ill-defined; use norm = layer_norm "
               "or rms_norm");
  }
}

int64_t LinearAttention::feature_dim() const {
  if (hedgehog_) return hedgehog_->feature_dim();
  return lrpe_ ? lrpe_->feature_dim() : head_dim();
}

Variable LinearAttention::features(const Variable& x, int64_t offset) const {
  if (hedgehog_) return hedgehog_->forward(x);  // [B, H, N, D] → [B, H, N, 2D]
  if (permute_former_)
    return apply_feature_map(options_.feature_map, permute_former_->permute(x, offset));
  if (lrpe_ && options_.feature_map == FeatureMap::kOnePlusElu) {
    return lrpe_->forward_of_one_plus_elu(x, offset);  // φ fused into the LRPE kernel
  }
  const Variable phi = apply_feature_map(options_.feature_map, x);
  return lrpe_ ? lrpe_->forward(phi, offset) : phi;
}

Variable LinearAttention::scale_by_decay(const Variable& features, int64_t offset, int sign) const {
  const int64_t h = options_.heads, n = features.size(2);
  const std::vector<double> gamma = permute_former_->decay(DType::kF64).to_double_vector();
  // Weights γ^(s−t) for t > s exceed 1 and grow geometrically with the length: refuse lengths
  // where γ^(−t) leaves the float range instead of returning inf/NaN.
  const double worst = (offset + n - 1) * -std::log(*std::min_element(gamma.begin(), gamma.end()));
  ROTA_CHECK(worst < 80.0,
             "LinearAttention: bidirectional PermuteFormer weights γ^(s−t) reach e^{:.3g} at "
             "length {}; this baseline is defined only for shorter sequences (max {})",
             worst, offset + n,
             static_cast<int64_t>(80.0 / -std::log(*std::min_element(gamma.begin(), gamma.end()))));
  std::vector<double> scale(h * n);
  for (int64_t hh = 0; hh < h; ++hh) {
    for (int64_t s = 0; s < n; ++s)
      scale[hh * n + s] = std::pow(gamma[hh], sign * double(offset + s));
  }
  return features * Variable(tensor_from(scale, {1, h, n, 1}, features.dtype()));
}

Tensor LinearAttention::decay_rates(DType dtype) const {
  if (permute_former_) return permute_former_->decay(dtype);
  if (decay_rates_.empty()) return Tensor();
  // The kernels read the rates as doubles: keep them exact whatever the activations' dtype.
  return tensor_from(decay_rates_, {options_.heads}, DType::kF64);
}

Variable LinearAttention::gated_attention(Variable q, Variable k, const Variable& v,
                                          const Variable& x, Segment* segment,
                                          const Tensor& segment_ids) const {
  const Variable log_gate = state_gate_->log_gate(x);
  if (state_gate_->options().rule == UpdateRule::kDelta) {
    q = l2_normalize(q);
    k = l2_normalize(k);
    const Variable per_step = log_gate.defined() ? squeeze(log_gate, -1) : Variable();
    if (segment) {
      CausalAttentionWithState carried =
          delta_rule_attention_with_state(q, k, v, state_gate_->beta(x), per_step, segment->state,
                                          options_.chunk_size, segment_ids);
      segment->state = carried.final_state;
      return carried.output;
    }
    return delta_rule_attention(q, k, v, state_gate_->beta(x), per_step, options_.chunk_size,
                                segment_ids);
  }
  const Variable key_scale = state_gate_->key_scale(x);
  if (key_scale.defined()) k = k * key_scale;
  if (segment) {
    CausalAttentionWithState carried = gated_linear_attention_with_state(
        q, k, v, log_gate, segment->state, options_.chunk_size, segment_ids);
    segment->state = carried.final_state;
    return carried.output;
  }
  return gated_linear_attention(q, k, v, log_gate, options_.chunk_size, segment_ids);
}

Variable LinearAttention::finish(const Variable& heads_out, const Variable& x) const {
  const int64_t b = heads_out.size(0), n = heads_out.size(2);
  Variable merged = reshape(permute(heads_out, {0, 2, 1, 3}), {b, n, options_.dim});
  if (layer_norm_) merged = layer_norm_->forward(merged);
  if (rms_norm_) merged = rms_norm_->forward(merged);
  if (group_norm_) merged = group_norm_->forward(merged);
  if (gate_proj_) {
    const Variable gate = gate_proj_->forward(x);
    merged = merged * (options_.output_gate == OutputGate::kSwish ? silu(gate) : sigmoid(gate));
  }
  return out_proj_->forward(merged);
}

Variable LinearAttention::forward(const Variable& x, const Tensor& key_mask, int64_t offset,
                                  const Tensor& segment_ids) const {
  return attend(x, key_mask, offset, nullptr, segment_ids);
}

bool LinearAttention::carries_state() const {
  return options_.causal;
}

LinearAttention::Segment LinearAttention::forward_segment(const Variable& x, int64_t offset,
                                                          const Variable& state,
                                                          const Tensor& segment_ids) const {
  ROTA_CHECK(carries_state(),
             "LinearAttention: segments with a carried state need a causal layer (a "
             "bidirectional layer's keys come from both sides)");
  ROTA_CHECK(offset >= 0, "LinearAttention: segment offset {} must be >= 0", offset);
  Segment segment{Variable(), state};
  segment.output = attend(x, Tensor(), offset, &segment, segment_ids);
  return segment;
}

Variable LinearAttention::attend(const Variable& x, const Tensor& key_mask, int64_t offset,
                                 Segment* segment, const Tensor& segment_ids) const {
  ROTA_CHECK(x.dim() == 3 && x.size(2) == options_.dim,
             "LinearAttention: input {} must be [B, N, {}]", shape_str(x.shape()), options_.dim);
  ROTA_CHECK(!key_mask.defined() || !options_.causal,
             "LinearAttention: a key padding mask applies to bidirectional attention only (a "
             "causal model never attends to later padding)");
  const int64_t b = x.size(0), n = x.size(1), h = options_.heads, d = head_dim();
  auto split_heads = [&](const Variable& t) {  // [B, N, E] → [B, H, N, D] (a view)
    return permute(reshape(t, {b, n, h, d}), {0, 2, 1, 3});
  };
  const std::vector<Variable> qkv =
      forward_shared_input({q_proj_.get(), k_proj_.get(), v_proj_.get()}, x);
  Variable q = features(split_heads(qkv[0]), offset);
  Variable k = features(split_heads(qkv[1]), offset);
  const Tensor decay = decay_rates(x.dtype());
  if (permute_former_ && !options_.causal) {
    q = scale_by_decay(q, offset, +1);
    k = scale_by_decay(k, offset, -1);
  }
  Variable v = split_heads(qkv[2]);
  const bool with_denominator = options_.norm == LinearAttentionNorm::kDenominator;
  if (with_denominator) {
    // One kernel call gives numerator and denominator: attend over [v, 1].
    v = concat({v, Variable(ones({b, h, n, 1}, x.dtype()))}, -1);
  }
  Variable out;
  if (state_gate_) {
    out = gated_attention(q, k, v, x, segment, segment_ids);
  } else if (segment) {
    CausalAttentionWithState carried = causal_linear_attention_with_state(
        q, k, v, segment->state, options_.chunk_size, decay, segment_ids);
    out = carried.output;
    segment->state = carried.final_state;
  } else {
    out = options_.causal
              ? causal_linear_attention(q, k, v, options_.chunk_size, decay, segment_ids)
              : bidirectional_linear_attention(q, k, v, key_mask, segment_ids);
  }
  if (with_denominator) {
    const auto parts = split(out, {d, 1}, -1);
    out = parts[0] / clamp_min(parts[1], options_.denominator_eps);
  }
  return finish(out, x);
}

LinearAttentionState LinearAttention::initial_state(int64_t batch) const {
  LinearAttentionState state;
  const int64_t columns = state_gate_ ? head_dim() : head_dim() + 1;
  state.kv = zeros({batch * options_.heads, feature_dim(), columns}, options_.dtype);
  return state;
}

Tensor LinearAttention::step(const Tensor& x, LinearAttentionState& state) const {
  ROTA_CHECK(options_.causal, "LinearAttention: step() needs a causal layer");
  ROTA_CHECK(x.dim() == 2 && x.size(1) == options_.dim,
             "LinearAttention: step input {} must be [B, {}]", shape_str(x.shape()), options_.dim);
  NoGradGuard no_grad;
  const int64_t b = x.size(0), h = options_.heads, d = head_dim();
  ROTA_CHECK(state.kv.defined() && state.kv.size(0) == b * h,
             "LinearAttention: state is for batch {}, input for batch {}",
             state.kv.defined() ? state.kv.size(0) / h : 0, b);
  const Variable xv(x.reshape({b, 1, options_.dim}));
  auto to_heads = [&](const Variable& t) {  // [B, 1, E] → [B, H, 1, D]
    return permute(reshape(t, {b, 1, h, d}), {0, 2, 1, 3});
  };
  const int64_t f = feature_dim();
  if (state_gate_) {  // [B, H, 1, ·] → [B·H, ·] per token
    Variable qg = features(to_heads(q_proj_->forward(xv)), state.position);
    Variable kg = features(to_heads(k_proj_->forward(xv)), state.position);
    const Tensor v = to_heads(v_proj_->forward(xv)).data().contiguous().reshape({b * h, d});
    const Variable log_gate = state_gate_->log_gate(xv);  // [B, H, 1, F or 1]
    Tensor o;
    if (state_gate_->options().rule == UpdateRule::kDelta) {
      qg = l2_normalize(qg);
      kg = l2_normalize(kg);
      const Tensor beta = state_gate_->beta(xv).data().contiguous().reshape({b * h});
      const Tensor gate =
          log_gate.defined() ? log_gate.data().contiguous().reshape({b * h}) : Tensor();
      o = backend::delta_rule_attention_step(qg.data().contiguous().reshape({b * h, f}),
                                             kg.data().contiguous().reshape({b * h, f}), v, beta,
                                             gate, state.kv);
    } else {
      const Variable key_scale = state_gate_->key_scale(xv);
      if (key_scale.defined()) kg = kg * key_scale;
      o = backend::gated_linear_attention_step(
          qg.data().contiguous().reshape({b * h, f}), kg.data().contiguous().reshape({b * h, f}), v,
          log_gate.data().contiguous().reshape({b * h, log_gate.size(-1)}), state.kv);
    }
    ++state.position;
    return finish(reshape(Variable(o), {b, h, 1, d}), xv).data().reshape({b, options_.dim});
  }
  const Tensor q = features(to_heads(q_proj_->forward(xv)), state.position).data();
  const Tensor k = features(to_heads(k_proj_->forward(xv)), state.position).data();
  const Tensor v = to_heads(v_proj_->forward(xv)).data();
  Tensor v1 = Tensor::empty({b * h, d + 1}, x.dtype());
  v1.narrow(1, 0, d).copy_from(v.reshape({b * h, d}));
  v1.narrow(1, d, 1).fill(1.0);
  const Tensor decay = decay_rates(x.dtype());
  const Tensor o = backend::causal_linear_attention_step(
      q.reshape({b * h, f}), k.reshape({b * h, f}), v1, state.kv, decay);
  ++state.position;
  Variable out(o.narrow(1, 0, d).contiguous());
  if (options_.norm == LinearAttentionNorm::kDenominator) {
    out = out / clamp_min(Variable(o.narrow(1, d, 1).contiguous()), options_.denominator_eps);
  }
  return finish(reshape(out, {b, h, 1, d}), xv).data().reshape({b, options_.dim});
}

}  // namespace rota::nn
