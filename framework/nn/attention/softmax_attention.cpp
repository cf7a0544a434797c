// Softmax attention layer: projections → heads → encoding → fused kernel → output projection.
#include "framework/nn/attention/softmax_attention.h"

#include <cmath>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/shape.h"
#include "framework/backend/primitives/indexing.h"
#include "framework/nn/position/alibi.h"
#include "framework/nn/position/relative_xl.h"
#include "framework/nn/position/shaw.h"
#include "framework/nn/position/skew.h"
#include "framework/nn/position/t5_bias.h"

namespace rota::nn {

backend::SoftmaxAttentionMasks softmax_masks(const AttentionCall& call) {
  backend::SoftmaxAttentionMasks masks;
  masks.causal = call.causal;
  masks.query_offset = call.query_offset;
  masks.window = call.window;
  masks.key_padding_mask = call.key_padding_mask;
  masks.visibility_mask = call.visibility_mask;
  masks.segment_ids = call.segment_ids;
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

SoftmaxPositionModules softmax_position_modules(const SoftmaxAttentionOptions& options,
                                                Generator& gen) {
  ROTA_CHECK(applies_to_softmax(options.position),
             "SoftmaxAttention: positional encoding '{}' acts on linear-attention features; "
             "softmax attention takes none, sinusoidal, learned_absolute (both added to the "
             "embeddings by the model), rope, alibi, t5, shaw, transformer_xl or skew",
             position_encoding_name(options.position));
  ROTA_CHECK(options.dim > 0 && options.heads > 0 && options.dim % options.heads == 0,
             "SoftmaxAttention: dim {} must be a positive multiple of heads {}", options.dim,
             options.heads);
  const int64_t d = options.dim / options.heads;
  SoftmaxPositionModules out;
  const PositionEncoding& position = options.position;
  if (const auto* rope = std::get_if<RopePosition>(&position)) {
    ROTA_CHECK(d % 2 == 0, "SoftmaxAttention: RoPE needs an even head dim, got {}", d);
    out.rope = std::make_shared<Lrpe>(
        rope_options(d, rope->pairing, rope->base, options.dtype, rope->scaling), gen);
  } else if (std::holds_alternative<AlibiPosition>(position)) {
    out.relative = std::make_shared<Alibi>(options.heads);
  } else if (const auto* t5 = std::get_if<T5Position>(&position)) {
    T5BiasOptions o;
    o.heads = options.heads;
    o.num_buckets = t5->buckets;
    o.max_distance = t5->max_distance;
    o.bidirectional = t5->bidirectional.value_or(!options.causal);
    o.init_std = 1.0 / std::sqrt(static_cast<double>(options.dim));  // HF: d_model^−1/2
    o.dtype = options.dtype;
    out.relative = std::make_shared<T5RelativeBias>(o, gen);
  } else if (const auto* shaw = std::get_if<ShawPosition>(&position)) {
    ShawOptions o;
    o.head_dim = d;
    o.clip = shaw->clip;
    o.clip_left = shaw->clip_left.value_or(-1);
    o.clip_right = shaw->clip_right.value_or(-1);
    o.values = shaw->values;
    o.dtype = options.dtype;
    out.relative = std::make_shared<ShawRelativeEncoding>(o, gen);
  } else if (const auto* xl = std::get_if<TransformerXlPosition>(&position)) {
    RelativeXlOptions o;
    o.heads = options.heads;
    o.head_dim = d;
    o.pe_dim = xl->pe_dim;
    o.base = xl->base;
    o.layout = xl->layout;
    o.dtype = options.dtype;
    out.relative = std::make_shared<RelativeXlEncoding>(o, gen);
  } else if (const auto* skew = std::get_if<SkewPosition>(&position)) {
    SkewOptions o;
    o.head_dim = d;
    o.max_len = skew->max_len;
    o.heads = options.heads;
    o.per_head = skew->per_head;
    o.dtype = options.dtype;
    out.relative = std::make_shared<SkewRelativeEncoding>(o, gen);
  }
  return out;
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
  ROTA_CHECK(options.window >= 0, "SoftmaxAttention: window must be >= 0 (0 = full), got {}",
             options.window);
  ROTA_CHECK(
      options.kv_heads >= 0 && (options.kv_heads == 0 || options.heads % options.kv_heads == 0),
      "SoftmaxAttention: heads {} must be a multiple of kv_heads {}", options.heads,
      options.kv_heads);
  ROTA_CHECK(!options.scale || std::isfinite(*options.scale),
             "SoftmaxAttention: scale must be finite");
  // Shaw, XL and skew draw their tables before the projections and T5 after them: the orders
  // models have always used, so a seed gives the same weights.
  const bool tables_first = std::holds_alternative<ShawPosition>(options.position) ||
                            std::holds_alternative<TransformerXlPosition>(options.position) ||
                            std::holds_alternative<SkewPosition>(options.position);
  SoftmaxPositionModules position;
  if (!options.custom_encoding && tables_first) position = softmax_position_modules(options, gen);
  const int64_t kv_width = kv_heads() * head_dim();  // H_kv·D
  q_proj_ = register_module(
      "q_proj",
      std::make_shared<Linear>(
          LinearOptions{e, e, options.qkv_bias, options.dtype, options.projection_init}, gen));
  k_proj_ = register_module(
      "k_proj", std::make_shared<Linear>(LinearOptions{kv, kv_width, options.qkv_bias,
                                                       options.dtype, options.projection_init},
                                         gen));
  v_proj_ = register_module(
      "v_proj", std::make_shared<Linear>(LinearOptions{kv, kv_width, options.qkv_bias,
                                                       options.dtype, options.projection_init},
                                         gen));
  out_proj_ = register_module(
      "out_proj",
      std::make_shared<Linear>(
          LinearOptions{e, e, options.output_bias, options.dtype, options.output_init}, gen));
  if (options.custom_encoding) {
    position.relative = options.custom_encoding;
  } else if (!tables_first) {
    position = softmax_position_modules(options, gen);
  }
  if (position.rope) rope_ = register_module("rope", position.rope);
  if (position.relative) relative_ = register_module("position", position.relative);
}

double SoftmaxAttention::scale() const {
  return options_.scale.value_or(1.0 / std::sqrt(static_cast<double>(head_dim())));
}

namespace {

/// Grouped-query attention's sharing: x [B, H_kv, N, D] → [B, H_kv·G, N, D], head j repeated
/// as heads j·G … j·G + G − 1 (the backward sums each group's gradients back onto its head).
Variable repeat_kv_heads(const Variable& x, int64_t group) {
  if (group == 1) return x;
  const int64_t b = x.size(0), hkv = x.size(1), n = x.size(2), d = x.size(3);
  return reshape(expand(unsqueeze(x, 2), {b, hkv, group, n, d}), {b, hkv * group, n, d});
}

}  // namespace

Variable SoftmaxAttention::attend(const Variable& q_in, const Variable& k_in, const Variable& v_in,
                                  const SoftmaxAttentionInputs& inputs) const {
  ROTA_CHECK(q_in.dim() == 4 && q_in.size(1) == options_.heads && k_in.dim() == 4 &&
                 k_in.size(1) == kv_heads() && v_in.dim() == 4 && v_in.size(1) == kv_heads(),
             "SoftmaxAttention::attend: q {}, k {}, v {} must have {} query and {} key/value heads",
             shape_str(q_in.shape()), shape_str(k_in.shape()), shape_str(v_in.shape()),
             options_.heads, kv_heads());
  Variable q = q_in, k = k_in;
  if (rope_) {  // rotate by absolute positions: queries at off + i, keys at j
    q = rope_->forward(q, inputs.query_offset);
    k = rope_->forward(k, 0);
  }
  const int64_t group = options_.heads / kv_heads();
  k = repeat_kv_heads(k, group);
  const Variable v = repeat_kv_heads(v_in, group);
  AttentionCall call;
  call.scale = scale();
  call.causal = options_.causal;
  call.query_offset = inputs.query_offset;
  call.window = options_.window;
  call.key_padding_mask = inputs.key_padding_mask;
  call.visibility_mask = inputs.visibility_mask;
  call.segment_ids = inputs.segment_ids;
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
  const int64_t d = head_dim();
  // [B, N, heads·D] → [B, heads, N, D] (a view)
  auto split_heads = [&](const Variable& t, int64_t n, int64_t heads) {
    return permute(reshape(t, {b, n, heads, d}), {0, 2, 1, 3});
  };
  // Projections of one input share a product: q, k, v for self-attention, k and v otherwise.
  std::vector<Variable> proj;
  if (query_input.impl() == key_value_input.impl()) {
    proj = forward_shared_input({q_proj_.get(), k_proj_.get(), v_proj_.get()}, query_input);
  } else {
    proj = forward_shared_input({k_proj_.get(), v_proj_.get()}, key_value_input);
    proj.insert(proj.begin(), q_proj_->forward(query_input));
  }
  const Variable q = split_heads(proj[0], nq, options_.heads);
  const Variable k = split_heads(proj[1], nk, kv_heads());
  const Variable v = split_heads(proj[2], nk, kv_heads());
  const Variable o = attend(q, k, v, inputs);  // [B, H, Nq, D]
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {b, nq, e}));
}

Tensor SoftmaxAttention::step(const Tensor& x, SoftmaxAttentionCache& cache) const {
  ROTA_CHECK(options_.causal, "SoftmaxAttention::step: one token at a time needs a causal layer");
  ROTA_CHECK(x.dim() == 2 && x.size(1) == options_.dim,
             "SoftmaxAttention::step: x {} must be [B, {}]", shape_str(x.shape()), options_.dim);
  NoGradGuard no_grad;
  const int64_t b = x.size(0), d = head_dim();
  ROTA_CHECK(cache.length() == 0 || cache.k.size(0) == b,
             "SoftmaxAttention::step: batch {} does not match the cache's {}", b, cache.k.size(0));
  const Variable xv(x.reshape({b, 1, options_.dim}));
  const std::vector<Variable> proj =
      forward_shared_input({q_proj_.get(), k_proj_.get(), v_proj_.get()}, xv);
  auto split_heads = [&](const Variable& t, int64_t heads) {  // [B, 1, heads·D] → [B, heads, 1, D]
    return permute(reshape(t, {b, 1, heads, d}), {0, 2, 1, 3}).data().contiguous();
  };
  const Tensor k = split_heads(proj[1], kv_heads()), v = split_heads(proj[2], kv_heads());
  cache.k = cache.k.defined() ? backend::concat({cache.k, k}, 2) : k;  // [B, H_kv, n + 1, D]
  cache.v = cache.v.defined() ? backend::concat({cache.v, v}, 2) : v;
  if (options_.window > 0 && cache.length() > options_.window) {
    // Keys older than the window are never seen again. Every encoding depends only on the
    // distance between query and key (RoPE rotates both from the first cached key), so
    // dropping them and shifting the offset gives the same scores.
    const int64_t drop = cache.length() - options_.window;
    cache.k = cache.k.narrow(2, drop, options_.window).contiguous();
    cache.v = cache.v.narrow(2, drop, options_.window).contiguous();
  }
  SoftmaxAttentionInputs inputs;
  inputs.query_offset = cache.length() - 1;  // the new query sits at the last key
  const Variable o = attend(Variable(split_heads(proj[0], options_.heads)), Variable(cache.k),
                            Variable(cache.v), inputs);
  return out_proj_->forward(reshape(permute(o, {0, 2, 1, 3}), {b, 1, options_.dim}))
      .data()
      .reshape({b, options_.dim});
}

}  // namespace rota::nn
