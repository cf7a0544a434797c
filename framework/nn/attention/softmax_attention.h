// Multi-head softmax attention layer (self and cross) with a choice of positional encoding.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "framework/autograd/ops/softmax_attention.h"
#include "framework/backend/fused/lrpe.h"
#include "framework/nn/attention/attention_call.h"
#include "framework/nn/linear.h"
#include "framework/nn/position/lrpe.h"

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

/// Positional encoding used inside the attention. Absolute embeddings (sinusoidal, learned:
/// framework/nn/position/absolute.h) are added to the token embeddings by the model instead and
/// combine with kNone.
enum class SoftmaxEncodingKind {
  kNone,    // NoPE: ℓ_ij = s·q_i·k_j
  kRope,    // rotary: q at position query_offset + i, k at j, rotated before the product
  kAlibi,   // ℓ_ij += −m_h·|t_ij|
  kT5,      // ℓ_ij += B[β(t_ij), h], learned per layer (share one via kCustom)
  kCustom,  // any RelativeAttentionEncoding supplied by the caller (Shaw, XL, skew, ...)
};

struct SoftmaxEncodingOptions {
  SoftmaxEncodingKind kind = SoftmaxEncodingKind::kNone;
  // RoPE
  backend::LrpePairing rope_pairing = backend::LrpePairing::kAdjacent;
  double rope_base = 10000.0;
  // T5
  int64_t t5_num_buckets = 32;
  int64_t t5_max_distance = 128;
  std::optional<bool> t5_bidirectional;  // default: !causal
  // kCustom: registered as the child `position` (parameters shared if the same instance is
  // given to several layers).
  std::shared_ptr<RelativeAttentionEncoding> custom;
};

/// Parses the encodings this layer builds itself: "none" | "nope", "rope" | "rope_adjacent",
/// "rope_half", "alibi", "t5". Unknown names throw, listing the accepted ones.
SoftmaxEncodingOptions parse_softmax_encoding(const std::string& name);
/// The canonical name of kind (and pairing for RoPE): "none", "rope", "rope_half", "alibi",
/// "t5", "custom".
std::string softmax_encoding_name(const SoftmaxEncodingOptions& encoding);

struct SoftmaxAttentionOptions {
  int64_t dim = 0;     // E: query input and output width
  int64_t heads = 1;   // H; head dim D = E / H
  int64_t kv_dim = 0;  // width of the key/value input (cross-attention); 0 means E
  bool causal = false;
  std::optional<double> scale;  // s; default 1/√D (T5-faithful runs: 1)
  double dropout = 0.0;         // attention dropout on the probabilities (training only)
  bool bias = true;             // biases of the q/k/v/out projections
  SoftmaxEncodingOptions encoding;
  double init_std = 0.0;  // see LinearOptions::init_std
  DType dtype = DType::kF32;
};

/// Per-call inputs.
struct SoftmaxAttentionInputs {
  Tensor key_padding_mask;   // undefined or [B, Nk], 0 = padding
  Tensor visibility_mask;    // undefined or [Nq, Nk], 0 = hidden (e.g. a chunk mask)
  int64_t query_offset = 0;  // query i sits at key position query_offset + i (never inferred)
};

/// Multi-head scaled dot-product attention:
///   q = x_q W_qᵀ + b_q, k = x_kv W_kᵀ + b_k, v = x_kv W_vᵀ + b_v, split into H heads of D;
///   per head o = softmax(s·q·kᵀ + encoding, hidden → −inf) (dropout) · v; y = [o_h] W_oᵀ + b_o.
/// The attention itself is the fused memory-efficient kernel (no N×N tensor kept).
/// Children: `q_proj`, `k_proj`, `v_proj`, `out_proj` (Linear), `rope` (Lrpe, frozen θ) or
/// `position` (ALiBi, T5 `position.weight` [N_b, H], or the custom encoding).
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
  /// The per-head part on projected heads: q [B, H, Nq, D], k [B, H, Nk, D], v [B, H, Nk, D]
  /// → [B, H, Nq, D] (encoding, masks, dropout, softmax, ·v).
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const SoftmaxAttentionInputs& inputs = {}) const;

  const SoftmaxAttentionOptions& options() const { return options_; }
  int64_t head_dim() const { return options_.dim / options_.heads; }
  double scale() const;
  /// The relative encoding in use (ALiBi, T5 or custom), null for none / RoPE.
  const std::shared_ptr<RelativeAttentionEncoding>& relative_encoding() const { return relative_; }

 private:
  SoftmaxAttentionOptions options_;
  std::shared_ptr<Generator> dropout_gen_;
  std::shared_ptr<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  std::shared_ptr<Lrpe> rope_;
  std::shared_ptr<RelativeAttentionEncoding> relative_;
};

}  // namespace rota::nn
