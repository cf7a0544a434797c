// One transformer block: attention and feed-forward sub-layers with residuals and LayerNorm.
#pragma once

#include <memory>

#include "framework/nn/attention/linear_attention.h"
#include "framework/nn/dropout.h"
#include "framework/nn/feed_forward.h"
#include "framework/nn/norm.h"
#include "models/model_options.h"

namespace rota::models {

/// pre-norm:  h = x + drop(attn(ln1(x)));  y = h + drop(ffn(ln2(h)))
/// post-norm: h = ln1(x + drop(attn(x)));  y = ln2(h + drop(ffn(h)))
/// Children: `ln1`, `attn`, `ln2`, `ffn`.
class TransformerBlock : public nn::Module {
 public:
  TransformerBlock(const ModelOptions& options, bool causal, Generator& init_gen,
                   std::shared_ptr<Generator> dropout_gen);
  /// x: [B, N, E]; key_mask: bidirectional only, [B, N] (0 = padding).
  Variable forward(const Variable& x, const Tensor& key_mask = Tensor()) const;
  /// One token: x [B, E] with this block's recurrent state (no gradient).
  Tensor step(const Tensor& x, nn::LinearAttentionState& state) const;
  const nn::LinearAttention& attention() const { return *attn_; }

 private:
  NormPlacement placement_;
  std::shared_ptr<nn::LayerNorm> ln1_, ln2_;
  std::shared_ptr<nn::LinearAttention> attn_;
  std::shared_ptr<nn::FeedForward> ffn_;
  std::shared_ptr<nn::Dropout> dropout_;
};

}  // namespace rota::models
