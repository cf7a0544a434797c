// One transformer block: attention and feed-forward sub-layers with residuals and norms.
#pragma once

#include <memory>

#include "framework/nn/attention/linear_attention.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/dropout.h"
#include "framework/nn/feed_forward.h"
#include "framework/nn/norm.h"
#include "models/model_options.h"

namespace rota::models {

/// A relative encoding shared by every block of a stack (T5's bias table). The owner block
/// registers it as its `attn.position`; the other blocks use it without registering it, so its
/// parameters appear once in named_parameters() and state_dict().
struct SharedAttentionEncoding {
  std::shared_ptr<nn::RelativeAttentionEncoding> encoding;
  bool owner = false;
};

/// The softmax-attention options of a block of model `o`: width, heads, scale, dropout, the
/// position encoding, init and dtype (Encoder builds its shared T5 table from them too).
nn::SoftmaxAttentionOptions softmax_attention_options(const ModelOptions& o, bool causal);

/// pre-norm:  h = x + drop(attn(ln1(x)));  y = h + drop(ffn(ln2(h)))
/// post-norm: h = ln1(x + drop(attn(x)));  y = ln2(h + drop(ffn(h)))
/// Children: `ln1`, `attn` (nn::LinearAttention or nn::SoftmaxAttention, by
/// options.attention_family), `ln2`, `ffn`. The norms are LayerNorm or RMSNorm (norm_kind);
/// options.bias = false drops every bias of the projections and the LayerNorms' β.
class TransformerBlock : public nn::Module {
 public:
  /// shared: for softmax models, an encoding used instead of building options.position for this
  /// block (Encoder passes its one T5 table to every block).
  TransformerBlock(const ModelOptions& options, bool causal, Generator& init_gen,
                   std::shared_ptr<Generator> dropout_gen,
                   const SharedAttentionEncoding& shared = {});
  /// x: [B, N, E]; key_mask: bidirectional only, [B, N] (0 = padding). Softmax streaming models
  /// also apply the chunk visibility mask [N, N]. segment_ids: undefined or [B, N] integers,
  /// packed documents: attention (and a linear layer's state) stays inside each document.
  Variable forward(const Variable& x, const Tensor& key_mask = Tensor(),
                   const Tensor& segment_ids = Tensor()) const;
  /// One segment of a longer causal sequence: x [B, N, E] at positions offset … offset + N − 1,
  /// the attention continuing from `state` (nn::LinearAttention::forward_segment); returns the
  /// output and the attention's state after the segment. Linear attention that carries_state()
  /// only; throws rota::Error otherwise.
  nn::LinearAttention::Segment forward_segment(const Variable& x, int64_t offset,
                                               const Variable& state,
                                               const Tensor& segment_ids = Tensor()) const;
  /// One token: x [B, E] with this block's recurrent state (no gradient). Linear attention only:
  /// throws rota::Error for softmax attention.
  Tensor step(const Tensor& x, nn::LinearAttentionState& state) const;
  /// One token through a causal softmax block: x [B, E] with this block's key/value cache (no
  /// gradient; no streaming). Throws rota::Error for linear attention.
  Tensor step(const Tensor& x, nn::SoftmaxAttentionCache& cache) const;
  /// The attention sub-layer's input and output inside one forward pass (attention transfer).
  struct AttentionIO {
    Variable input;   // [B, N, E]: ln1(x) pre-norm, x post-norm
    Variable output;  // [B, N, E]: attn(input), before dropout and the residual
  };
  /// forward() that also returns what its attention sub-layer saw and gave.
  Variable forward_recording(const Variable& x, AttentionIO& io, const Tensor& key_mask = Tensor(),
                             const Tensor& segment_ids = Tensor()) const;
  /// The attention sub-layer alone on a given input [B, N, E] → [B, N, E] (no norm, dropout or
  /// residual): what forward_recording records as `output` for that `input`.
  Variable attention_sublayer(const Variable& input, const Tensor& key_mask = Tensor(),
                              const Tensor& segment_ids = Tensor()) const {
    return attend(input, key_mask, segment_ids);
  }
  bool is_softmax() const { return softmax_attn_ != nullptr; }
  /// The linear attention; throws rota::Error for a softmax block.
  const nn::LinearAttention& attention() const;
  /// The softmax attention; throws rota::Error for a linear block.
  const nn::SoftmaxAttention& softmax_attention() const;
  /// The relative encoding the attention uses (the shared one for non-owner blocks), null for
  /// linear attention and for softmax encodings without one (none, absolute, RoPE).
  const nn::RelativeAttentionEncoding* relative_encoding() const;

 private:
  Variable attend(const Variable& x, const Tensor& key_mask, const Tensor& segment_ids) const;
  Variable forward_impl(const Variable& x, const Tensor& key_mask, const Tensor& segment_ids,
                        AttentionIO* io) const;

  NormPlacement placement_;
  SoftmaxModelOptions softmax_options_;
  std::shared_ptr<nn::Norm> ln1_, ln2_;  // LayerNorm or RMSNorm (ModelOptions::norm_kind)
  std::shared_ptr<nn::LinearAttention> linear_attn_;
  std::shared_ptr<nn::SoftmaxAttention> softmax_attn_;
  std::shared_ptr<nn::RelativeAttentionEncoding> shared_encoding_;
  std::shared_ptr<nn::FeedForward> ffn_;
  std::shared_ptr<nn::Dropout> dropout_;
};

}  // namespace rota::models
