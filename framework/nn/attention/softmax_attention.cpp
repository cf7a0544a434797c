// Softmax attention layer: projections → heads → encoding → fused kernel → output projection.
#include "framework/nn/attention/softmax_attention.h"

#include <cmath>

#include "framework/autograd/ops/shape.h"
#include "framework/nn/position/alibi.h"
#include "framework/nn/position/t5_bias.h"

namespace rota::nn {

backend::SoftmaxAttentionMasks softmax_masks(const AttentionCall& call) {
  backend::SoftmaxAttentionMasks masks;
  masks.causal = call.causal;
  masks.query_offset = call.query_offset;
  masks.key_padding_mask = call.key_padding_mask;
  masks.visibility_mask = call.visibility_mask;
  return masks;
}

Variable attend_softmax(const Variable& q, const Variable& k, const Variable& v,
                        const Variable& bias, const AttentionCall& call) {
  const double p = call.training ? call.dropout : 0.0;
  ROTA_CHECK(p == 0.0 || call.generator != nullptr,
             "softmax attention: dropout {} in training needs AttentionCall::generator", p);
  return softmax_attention(q, k, v, bias, call.scale, softmax_masks(call), p, call.generator);
}

Variable attend_softmax_relative(const Variable& q, const Variable& k, const Variable& v,
                                 const Variable& table, const AttentionCall& call) {
  const double p = call.training ? call.dropout : 0.0;
  ROTA_CHECK(p == 0.0 || call.generator != nullptr,
             "softmax attention: dropout {} in training needs AttentionCall::generator", p);
  return softmax_attention_relative(q, k, v, table, call.scale, softmax_masks(call), p,
                                    call.generator);
}

SoftmaxEncodingOptions parse_softmax_encoding(const std::string& name) {
  SoftmaxEncodingOptions o;
  if (name == "none" || name == "nope") {
    o.kind = SoftmaxEncodingKind::kNone;
  } else if (name == "rope" || name == "rope_adjacent") {
    o.kind = SoftmaxEncodingKind::kRope;
    o.rope_pairing = backend::LrpePairing::kAdjacent;
  } else if (name == "rope_half") {
    o.kind = SoftmaxEncodingKind::kRope;
    o.rope_pairing = backend::LrpePairing::kHalf;
  } else if (name == "alibi") {
    o.kind = SoftmaxEncodingKind::kAlibi;
  } else if (name == "t5") {
    o.kind = SoftmaxEncodingKind::kT5;
  } else {
    fail(
        "softmax attention: unknown encoding '{}' (expected none|nope, rope|rope_adjacent, "
        "rope_half, alibi, t5; relative encodings such as Shaw or XL are passed as a custom "
        "RelativeAttentionEncoding)",
        name);
  }
  return o;
}

std::string softmax_encoding_name(const SoftmaxEncodingOptions& encoding) {
  switch (encoding.kind) {
    case SoftmaxEncodingKind::kNone:
      return "none";
    case SoftmaxEncodingKind::kRope:
      return encoding.rope_pairing == backend::LrpePairing::kHalf ? "rope_half" : "rope";
    case SoftmaxEncodingKind::kAlibi:
      return "alibi";
    case SoftmaxEncodingKind::kT5:
      return "t5";
    case SoftmaxEncodingKind::kCustom:
      return "custom";
  }
  return "none";
}

SoftmaxAttention::SoftmaxAttention(const SoftmaxAttentionOptions& options, Generator& gen,
                                   std::shared_ptr<Generator> dropout_gen)
    : options_(options), dropout_gen_(std::move(dropout_gen)) {
  const int64_t e = options.dim, kv = options.kv_dim > 0 ? options.kv_dim : options.dim;
  ROTA_CHECK(e > 0 && options.heads > 0 && e % options.heads == 0,
             "SoftmaxAttention: dim {} must be a positive multiple of heads {}", e, options.heads);
  ROTA_CHECK(options.dropout >= 0.0 && options.dropout < 1.0,
             "SoftmaxAttention: dropout {} is outside [0, 1)", options.dropout);
  ROTA_CHECK(options.dropout == 0.0 || dropout_gen_ != nullptr,
             "SoftmaxAttention: dropout {} needs a dropout generator", options.dropout);
  ROTA_CHECK(!options.scale || std::isfinite(*options.scale),
             "SoftmaxAttention: scale must be finite");
  q_proj_ = register_module(
      "q_proj", std::make_shared<Linear>(
                    LinearOptions{e, e, options.bias, options.dtype, options.init_std}, gen));
  k_proj_ = register_module(
      "k_proj", std::make_shared<Linear>(
                    LinearOptions{kv, e, options.bias, options.dtype, options.init_std}, gen));
  v_proj_ = register_module(
      "v_proj", std::make_shared<Linear>(
                    LinearOptions{kv, e, options.bias, options.dtype, options.init_std}, gen));
  out_proj_ = register_module(
      "out_proj", std::make_shared<Linear>(
                      LinearOptions{e, e, options.bias, options.dtype, options.init_std}, gen));
  const SoftmaxEncodingOptions& enc = options.encoding;
  switch (enc.kind) {
    case SoftmaxEncodingKind::kNone:
      break;
    case SoftmaxEncodingKind::kRope:
      ROTA_CHECK(head_dim() % 2 == 0, "SoftmaxAttention: RoPE needs an even head dim, got {}",
                 head_dim());
      rope_ = register_module(
          "rope",
          std::make_shared<Lrpe>(
              rope_options(head_dim(), enc.rope_pairing, enc.rope_base, options.dtype), gen));
      break;
    case SoftmaxEncodingKind::kAlibi:
      relative_ = register_module("position", std::make_shared<Alibi>(options.heads));
      break;
    case SoftmaxEncodingKind::kT5: {
      T5BiasOptions t5;
      t5.heads = options.heads;
      t5.num_buckets = enc.t5_num_buckets;
      t5.max_distance = enc.t5_max_distance;
      t5.bidirectional = enc.t5_bidirectional.value_or(!options.causal);
      t5.init_std = 1.0 / std::sqrt(static_cast<double>(e));  // HF: d_model^−1/2
      t5.dtype = options.dtype;
      relative_ = register_module("position", std::make_shared<T5RelativeBias>(t5, gen));
      break;
    }
    case SoftmaxEncodingKind::kCustom:
      ROTA_CHECK(enc.custom != nullptr,
                 "SoftmaxAttention: encoding kind custom needs SoftmaxEncodingOptions::custom");
      relative_ = register_module("position", enc.custom);
      break;
  }
}

double SoftmaxAttention::scale() const {
  return options_.scale.value_or(1.0 / std::sqrt(static_cast<double>(head_dim())));
}

Variable SoftmaxAttention::attend(const Variable& q_in, const Variable& k_in, const Variable& v,
                                  const SoftmaxAttentionInputs& inputs) const {
  Variable q = q_in, k = k_in;
  if (rope_) {  // rotate by absolute positions: queries at off + i, keys at j
    q = rope_->forward(q, inputs.query_offset);
    k = rope_->forward(k, 0);
  }
  AttentionCall call;
  call.scale = scale();
  call.causal = options_.causal;
  call.query_offset = inputs.query_offset;
  call.key_padding_mask = inputs.key_padding_mask;
  call.visibility_mask = inputs.visibility_mask;
  call.dropout = options_.dropout;
  call.generator = dropout_gen_.get();
  call.training = is_training();
  return relative_ ? relative_->attend(q, k, v, call) : attend_softmax(q, k, v, Variable(), call);
}

Variable SoftmaxAttention::forward(const Variable& x, const SoftmaxAttentionInputs& inputs) const {
  return forward(x, x, inputs);
}

Variable SoftmaxAttention::forward(const Variable& query_input, const Variable& key_value_input,
                                   const SoftmaxAttentionInputs& inputs) const {
  const int64_t e = options_.dim, kv = options_.kv_dim > 0 ? options_.kv_dim : options_.dim;
  ROTA_CHECK(query_input.dim() == 3 && query_input.size(2) == e,
             "SoftmaxAttention: query input {} must be [B, Nq, {}]", shape_str(query_input.shape()),
             e);
  ROTA_CHECK(key_value_input.dim() == 3 && key_value_input.size(2) == kv &&
                 key_value_input.size(0) == query_input.size(0),
             "SoftmaxAttention: key/value input {} must be [B = {}, Nk, {}]",
             shape_str(key_value_input.shape()), query_input.size(0), kv);
  const int64_t b = query_input.size(0), nq = query_input.size(1), nk = key_value_input.size(1);
  const int64_t h = options_.heads, d = head_dim();
  auto split_heads = [&](const Variable& t, int64_t n) {  // [B, N, E] → [B, H, N, D] (a view)
    return permute(reshape(t, {b, n, h, d}), {0, 2, 1, 3});
  };
  // Projections of one input share a product: q, k, v for self-attention, k and v otherwise.
  std::vector<Variable> proj;
  if (query_input.impl() == key_value_input.impl()) {
    proj = forward_shared_input({q_proj_.get(), k_proj_.get(), v_proj_.get()}, query_input);
  } else {
    proj = forward_shared_input({k_proj_.get(), v_proj_.get()}, key_value_input);
    proj.insert(proj.begin(), q_proj_->forward(query_input));
  }
  const Variable q = split_heads(proj[0], nq);
  const Variable k = split_heads(proj[1], nk);
  const Variable v = split_heads(proj[2], nk);
  const Variable o = attend(q, k, v, inputs);  // [B, H, Nq, D]
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {b, nq, e}));
}

}  // namespace rota::nn
