// Transformer block.
#include "models/transformer_block.h"

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"

namespace rota::models {

TransformerBlock::TransformerBlock(const ModelOptions& o, bool causal, Generator& init_gen,
                                   std::shared_ptr<Generator> dropout_gen)
    : placement_(o.norm_placement) {
  nn::LinearAttentionOptions a = nn::with_position_encoding(
      o.attention, nn::linear_position_encoding_name(o.position), o.lrpe);
  a.dim = o.dim;
  a.heads = o.heads;
  a.causal = causal;
  a.init_std = o.init_std;
  a.dtype = o.dtype;
  ln1_ = register_module(
      "ln1", std::make_shared<nn::LayerNorm>(nn::NormOptions{o.dim, 1e-5, true, o.dtype}));
  attn_ = register_module("attn", std::make_shared<nn::LinearAttention>(a, init_gen));
  ln2_ = register_module(
      "ln2", std::make_shared<nn::LayerNorm>(nn::NormOptions{o.dim, 1e-5, true, o.dtype}));
  nn::FeedForwardOptions f;
  f.dim = o.dim;
  f.hidden_dim = o.ffn_dim;
  f.activation = o.activation;
  f.dropout = o.dropout;
  f.init_std = o.init_std;
  f.dtype = o.dtype;
  ffn_ = register_module("ffn", std::make_shared<nn::FeedForward>(f, init_gen, dropout_gen));
  dropout_ = register_module("dropout", std::make_shared<nn::Dropout>(o.dropout, dropout_gen));
}

Variable TransformerBlock::forward(const Variable& x, const Tensor& key_mask) const {
  if (placement_ == NormPlacement::kPre) {
    const Variable h = x + dropout_->forward(attn_->forward(ln1_->forward(x), key_mask));
    return h + dropout_->forward(ffn_->forward(ln2_->forward(h)));
  }
  const Variable h = ln1_->forward(x + dropout_->forward(attn_->forward(x, key_mask)));
  return ln2_->forward(h + dropout_->forward(ffn_->forward(h)));
}

Tensor TransformerBlock::step(const Tensor& x, nn::LinearAttentionState& state) const {
  // Generation: no graph, and dropout inactive (the caller puts the model in eval mode).
  NoGradGuard no_grad;
  const Variable xv(x);
  if (placement_ == NormPlacement::kPre) {
    const Variable h = xv + Variable(attn_->step(ln1_->forward(xv).data(), state));
    return (h + ffn_->forward(ln2_->forward(h))).data();
  }
  const Variable h = ln1_->forward(xv + Variable(attn_->step(x, state)));
  return ln2_->forward(h + ffn_->forward(h)).data();
}

}  // namespace rota::models
