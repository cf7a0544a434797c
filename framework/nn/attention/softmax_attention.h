// Multi-head softmax attention layer (self and cross) with a choice of positional encoding.
#pragma once

#include <memory>
#include <optional>

#include "framework/autograd/ops/softmax_attention.h"
#include "framework/nn/attention/attention_call.h"
#include "framework/nn/linear.h"
#include "framework/nn/position/lrpe.h"
#include "framework/nn/position/position_encoding.h"

namespace rota::nn {

/// The call's masks in the kernel's form (causal, query_offset, padding, visibility).
backend::SoftmaxAttentionMasks softmax_masks(const AttentionCall& call);

/// softmax_attention(q, k, v, bias) with the call's scale and masks; attention dropout
/// (call.dropout, drawing one seed from call.generator) only when call.training.
/// bias may be undefined. This is what every RelativeAttentionEncoding ends in.
Variable attend_softmax(const Variable& q, const Variable& k, const Variable& v,
                        const Variable& bias, const AttentionCall& call);

/// The same with a bias-only relative encoding's table [H or 1, Nq + Nk − 1] (row r ↔
/// t = r − (Nq − 1) − call.query_offset), through softmax_attention_relative: no N×N bias.
Variable attend_softmax_relative(const Variable& q, const Variable& k, const Variable& v,
                                 const Variable& table, const AttentionCall& call);

struct SoftmaxAttentionOptions {
  int64_t dim = 0;    // E: query input and output width
  int64_t heads = 1;  // H; head dim D = E / H
  /// H_kv key/value heads (grouped-query attention): H a multiple of it; query head h reads
  /// key/value head ⌊h / (H / H_kv)⌋. 0 means H (every query head has its own).
  int64_t kv_heads = 0;
  int64_t kv_dim = 0;  // width of the key/value input (cross-attention); 0 means E
  bool causal = false;
  std::optional<double> scale;  // s; default 1/√D (T5-faithful runs: 1)
  double dropout = 0.0;         // attention dropout on the probabilities (training only)
  /// Sliding window W >= 1: query i (at key position query_offset + i) sees only keys j with
  /// query_offset + i − j < W (with causal: the previous W keys including itself); the fused
  /// kernel skips the key tiles outside it. 0: no window.
  int64_t window = 0;
  bool qkv_bias = true;     // biases of the q/k/v projections
  bool output_bias = true;  // bias of out_proj
  /// The positional encoding, built by softmax_position_modules: none and the absolute
  /// encodings (added to the embeddings by the model) leave the attention without one; RoPE,
  /// ALiBi, T5, Shaw, Transformer-XL and the skew act inside it; LRPE and PermuteFormer are
  /// refused.
  PositionEncoding position = NoPosition{};
  /// A caller-built encoding used instead of building one from `position` (registered as the
  /// child `position`; the same instance given to several layers shares its parameters, as
  /// T5's one bias table per stack). Any RelativeAttentionEncoding: Shaw, XL, skew, ALiBi, T5.
  std::shared_ptr<RelativeAttentionEncoding> custom_encoding;
  WeightInit projection_init;  // q, k and v (default: PyTorch's)
  WeightInit output_init;      // out_proj, which writes into the residual stream
  DType dtype = DType::kF32;
};

/// What softmax attention builds for its positional encoding (at most one is set).
struct SoftmaxPositionModules {
  std::shared_ptr<Lrpe> rope;                           // RoPE: rotates q and k (child `rope`)
  std::shared_ptr<RelativeAttentionEncoding> relative;  // ALiBi, T5, Shaw, XL, skew (`position`)
};

/// The one factory from options.position to the modules of a softmax-attention layer with
/// options.dim, heads, causal and dtype: nothing for none and the absolute encodings; a frozen
/// Lrpe (rope_options) for RoPE (even head dim); Alibi; T5RelativeBias (bidirectional unless
/// causal, table init normal(0, E^−1/2) as in HF); ShawRelativeEncoding, RelativeXlEncoding,
/// SkewRelativeEncoding. Parameters are drawn from gen. LRPE and PermuteFormer throw
/// rota::Error naming the encoding. Ignores options.custom_encoding.
SoftmaxPositionModules softmax_position_modules(const SoftmaxAttentionOptions& options,
                                                Generator& gen);

/// Per-call inputs.
struct SoftmaxAttentionInputs {
  Tensor key_padding_mask;   // undefined or [B, Nk], 0 = padding
  Tensor visibility_mask;    // undefined or [Nq, Nk], 0 = hidden (e.g. a chunk mask)
  int64_t query_offset = 0;  // query i sits at key position query_offset + i (never inferred)
  Tensor segment_ids;        // undefined or [B, Nk]: packed documents (AttentionCall)
};

/// What one-token-at-a-time (causal) self-attention carries between steps: the projected keys
/// and values of every earlier token, unrotated (RoPE and the relative encodings see them with
/// the same positions as a full forward pass); H_kv heads with grouped-query attention.
struct SoftmaxAttentionCache {
  Tensor k;  // [B, H_kv, n, D] (undefined before the first step)
  Tensor v;  // [B, H_kv, n, D]
  int64_t length() const { return k.defined() ? k.size(2) : 0; }
};

/// Multi-head scaled dot-product attention:
///   q = x_q W_qᵀ + b_q, k = x_kv W_kᵀ + b_k, v = x_kv W_vᵀ + b_v, q split into H heads of D,
///   k and v into H_kv heads (W_k, W_v [H_kv·D, kv_dim]), each shared by H / H_kv query heads;
///   per head o = softmax(s·q·kᵀ + encoding, hidden → −inf) (dropout) · v; y = [o_h] W_oᵀ + b_o.
/// The attention itself is the fused memory-efficient kernel (no N×N tensor kept).
/// Children: `q_proj`, `k_proj`, `v_proj`, `out_proj` (Linear), `rope` (Lrpe, frozen θ) or
/// `position` (ALiBi, T5 `position.weight` [N_b, H], Shaw, XL, skew, or the custom encoding).
/// Shaw, XL and skew draw their parameters from gen before the projections, T5 after them.
class SoftmaxAttention : public Module {
 public:
  /// dropout_gen: the shared dropout stream; required when options.dropout > 0.
  SoftmaxAttention(const SoftmaxAttentionOptions& options, Generator& gen,
                   std::shared_ptr<Generator> dropout_gen = nullptr);

  /// Self-attention: x [B, N, E] → [B, N, E].
  Variable forward(const Variable& x, const SoftmaxAttentionInputs& inputs = {}) const;
  /// Cross-attention: query_input [B, Nq, E], key_value_input [B, Nk, kv_dim] → [B, Nq, E].
  Variable forward(const Variable& query_input, const Variable& key_value_input,
                   const SoftmaxAttentionInputs& inputs = {}) const;
  /// One token of causal self-attention: x [B, E] at position cache.length() → [B, E], with
  /// its key and value appended to the cache. Gives the last row of forward() on the whole
  /// sequence (in eval mode); no gradient. Causal layers only.
  Tensor step(const Tensor& x, SoftmaxAttentionCache& cache) const;
  /// The per-head part on projected heads: q [B, H, Nq, D], k [B, H_kv, Nk, D],
  /// v [B, H_kv, Nk, D] → [B, H, Nq, D] (encoding, masks, dropout, softmax, ·v).
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const SoftmaxAttentionInputs& inputs = {}) const;

  const SoftmaxAttentionOptions& options() const { return options_; }
  int64_t head_dim() const { return options_.dim / options_.heads; }
  /// H_kv (options.kv_heads, or H when it is 0).
  int64_t kv_heads() const { return options_.kv_heads > 0 ? options_.kv_heads : options_.heads; }
  double scale() const;
  /// The relative encoding in use (ALiBi, T5, Shaw, XL, skew or custom), null for none / RoPE.
  const std::shared_ptr<RelativeAttentionEncoding>& relative_encoding() const { return relative_; }

 private:
  SoftmaxAttentionOptions options_;
  std::shared_ptr<Generator> dropout_gen_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::shared_ptr<Lrpe> rope_;
  std::shared_ptr<RelativeAttentionEncoding> relative_;
};

}  // namespace rota::nn
