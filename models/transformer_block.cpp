// Transformer block.
#include "models/transformer_block.h"

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/nn/attention/streaming_chunk_attention.h"

namespace rota::models {

namespace {

/// A relative encoding owned and registered by another block: attend() goes to the owner, and
/// registering this one adds no parameters.
class BorrowedRelativeEncoding : public nn::RelativeAttentionEncoding {
 public:
  explicit BorrowedRelativeEncoding(std::shared_ptr<const nn::RelativeAttentionEncoding> owner)
      : owner_(std::move(owner)) {}
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const nn::AttentionCall& call) const override {
    return owner_->attend(q, k, v, call);
  }

 private:
  std::shared_ptr<const nn::RelativeAttentionEncoding> owner_;
};

}  // namespace

nn::SoftmaxAttentionOptions softmax_attention_options(const ModelOptions& o, bool causal) {
  nn::SoftmaxAttentionOptions a;
  a.dim = o.dim;
  a.heads = o.heads;
  a.causal = causal;
  a.scale = o.softmax.scale;
  a.dropout = o.softmax.dropout;
  a.window = o.softmax.window;
  a.position = o.position;
  const ParameterInits inits = parameter_inits(o);
  a.projection_init = inits.attention_input;
  a.output_init = inits.attention_output;
  a.dtype = o.dtype;
  a.kv_heads = o.kv_heads;
  a.qkv_bias = o.qkv_bias();
  a.output_bias = o.attention_out_bias();
  return a;
}

TransformerBlock::TransformerBlock(const ModelOptions& o, bool causal, Generator& init_gen,
                                   std::shared_ptr<Generator> dropout_gen,
                                   const SharedAttentionEncoding& shared)
    : placement_(o.norm_placement), softmax_options_(o.softmax) {
  const nn::NormOptions norm{o.dim, o.norm_eps, true, o.dtype, o.norm_bias()};
  ln1_ = register_module("ln1", nn::make_norm(o.norm_kind, norm));
  if (o.attention_family == AttentionFamily::kLinear) {
    nn::LinearAttentionOptions a = o.attention;
    a.position = o.position;
    a.dim = o.dim;
    a.heads = o.heads;
    a.causal = causal;
    const ParameterInits inits = parameter_inits(o);
    a.projection_init = inits.attention_input;
    a.output_init = inits.attention_output;
    a.dtype = o.dtype;
    ROTA_CHECK(o.kv_heads == 0 || o.kv_heads == o.heads,
               "model: kv_heads {} (grouped-query attention) applies to softmax attention; "
               "linear attention has one key and value head per query head ({})",
               o.kv_heads, o.heads);
    a.qkv_bias = o.qkv_bias();
    a.output_bias = o.attention_out_bias();
    a.norm_bias = o.norm_bias();
    linear_attn_ = register_module("attn", std::make_shared<nn::LinearAttention>(a, init_gen));
  } else {
    ROTA_CHECK(o.heads > 0 && o.dim > 0 && o.dim % o.heads == 0,
               "model: width {} must be a positive multiple of heads {}", o.dim, o.heads);
    ROTA_CHECK(o.softmax.stream_chunk >= 0,
               "model: softmax streaming chunk must be >= 0 (0 = no streaming), got {}",
               o.softmax.stream_chunk);
    nn::SoftmaxAttentionOptions a = softmax_attention_options(o, causal);
    if (shared.encoding) {
      a.custom_encoding = shared.owner
                              ? shared.encoding
                              : std::make_shared<BorrowedRelativeEncoding>(shared.encoding);
      if (!shared.owner) shared_encoding_ = shared.encoding;
    }
    softmax_attn_ =
        register_module("attn", std::make_shared<nn::SoftmaxAttention>(a, init_gen, dropout_gen));
  }
  ln2_ = register_module("ln2", nn::make_norm(o.norm_kind, norm));
  nn::FeedForwardOptions f;
  f.dim = o.dim;
  f.hidden_dim = o.ffn_dim;
  f.activation = o.activation;
  f.dropout = o.dropout;
  const ParameterInits inits = parameter_inits(o);
  f.first_init = inits.ffn_first;
  f.second_init = inits.ffn_second;
  f.dtype = o.dtype;
  f.bias = o.ffn_bias();
  ffn_ = register_module("ffn", std::make_shared<nn::FeedForward>(f, init_gen, dropout_gen));
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(o.dropout, dropout_gen));
}

const nn::LinearAttention& TransformerBlock::attention() const {
  ROTA_CHECK(linear_attn_ != nullptr,
             "TransformerBlock::attention: this block uses softmax attention, not linear");
  return *linear_attn_;
}

const nn::SoftmaxAttention& TransformerBlock::softmax_attention() const {
  ROTA_CHECK(softmax_attn_ != nullptr,
             "TransformerBlock::softmax_attention: this block uses linear attention");
  return *softmax_attn_;
}

const nn::RelativeAttentionEncoding* TransformerBlock::relative_encoding() const {
  if (shared_encoding_) return shared_encoding_.get();
  return softmax_attn_ ? softmax_attn_->relative_encoding().get() : nullptr;
}

Variable TransformerBlock::attend(const Variable& x, const Tensor& key_mask,
                                  const Tensor& segment_ids) const {
  if (linear_attn_) return linear_attn_->forward(x, key_mask, 0, segment_ids);
  nn::SoftmaxAttentionInputs inputs;
  inputs.key_padding_mask = key_mask;
  inputs.segment_ids = segment_ids;
  if (softmax_options_.stream_chunk > 0) {
    inputs.visibility_mask = nn::chunk_visibility_mask(x.size(1), softmax_options_.stream_chunk,
                                                       softmax_options_.stream_left_memory);
  }
  return softmax_attn_->forward(x, inputs);
}

Variable TransformerBlock::forward(const Variable& x, const Tensor& key_mask,
                                   const Tensor& segment_ids) const {
  return forward_impl(x, key_mask, segment_ids, nullptr);
}

Variable TransformerBlock::forward_recording(const Variable& x, AttentionIO& io,
                                             const Tensor& key_mask,
                                             const Tensor& segment_ids) const {
  return forward_impl(x, key_mask, segment_ids, &io);
}

Variable TransformerBlock::forward_impl(const Variable& x, const Tensor& key_mask,
                                        const Tensor& segment_ids, AttentionIO* io) const {
  const Variable input = placement_ == NormPlacement::kPre ? ln1_->forward(x) : x;
  const Variable attended = attend(input, key_mask, segment_ids);
  if (io != nullptr) *io = {input, attended};
  if (placement_ == NormPlacement::kPre) {
    const Variable h = x + dropout_->forward(attended);
    return h + dropout_->forward(ffn_->forward(ln2_->forward(h)));
  }
  const Variable h = ln1_->forward(x + dropout_->forward(attended));
  return ln2_->forward(h + dropout_->forward(ffn_->forward(h)));
}

nn::LinearAttention::Segment TransformerBlock::forward_segment(const Variable& x, int64_t offset,
                                                               const Variable& state,
                                                               const Tensor& segment_ids) const {
  ROTA_CHECK(linear_attn_ != nullptr,
             "TransformerBlock: segments with a carried state need linear attention; a softmax "
             "block has no fixed-size state");
  if (placement_ == NormPlacement::kPre) {
    nn::LinearAttention::Segment a =
        linear_attn_->forward_segment(ln1_->forward(x), offset, state, segment_ids);
    const Variable h = x + dropout_->forward(a.output);
    return {h + dropout_->forward(ffn_->forward(ln2_->forward(h))), a.state};
  }
  nn::LinearAttention::Segment a = linear_attn_->forward_segment(x, offset, state, segment_ids);
  const Variable h = ln1_->forward(x + dropout_->forward(a.output));
  return {ln2_->forward(h + dropout_->forward(ffn_->forward(h))), a.state};
}

Tensor TransformerBlock::step(const Tensor& x, nn::LinearAttentionState& state) const {
  ROTA_CHECK(linear_attn_ != nullptr,
             "TransformerBlock::step: recurrent generation needs linear attention; a "
             "softmax-attention model has no recurrent state (run full forward passes instead)");
  // Generation: no graph, and dropout inactive (the caller puts the model in eval mode).
  NoGradGuard no_grad;
  const Variable xv(x);
  if (placement_ == NormPlacement::kPre) {
    const Variable h = xv + Variable(linear_attn_->step(ln1_->forward(xv).data(), state));
    return (h + ffn_->forward(ln2_->forward(h))).data();
  }
  const Variable h = ln1_->forward(xv + Variable(linear_attn_->step(x, state)));
  return ln2_->forward(h + ffn_->forward(h)).data();
}

Tensor TransformerBlock::step(const Tensor& x, nn::SoftmaxAttentionCache& cache) const {
  ROTA_CHECK(softmax_attn_ != nullptr,
             "TransformerBlock::step: a key/value cache is for softmax blocks; this block uses "
             "linear attention (pass its LinearAttentionState)");
  ROTA_CHECK(softmax_options_.stream_chunk == 0,
             "TransformerBlock::step: streaming softmax blocks cannot be stepped token by token");
  NoGradGuard no_grad;
  const Variable xv(x);
  if (placement_ == NormPlacement::kPre) {
    const Variable h = xv + Variable(softmax_attn_->step(ln1_->forward(xv).data(), cache));
    return (h + ffn_->forward(ln2_->forward(h))).data();
  }
  const Variable h = ln1_->forward(xv + Variable(softmax_attn_->step(x, cache)));
  return ln2_->forward(h + ffn_->forward(h)).data();
}

}  // namespace rota::models
