// T5 relative position bias: a learned scalar per (log-spaced distance bucket, head).
#pragma once

#include "framework/nn/attention/attention_call.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// T5's bucket of distance t = P_k − P_q (encodings.md section 6, HF/Mesh-TF):
///   bidirectional: n' = N_b/2, base = n' if t > 0 else 0, n = |t|;
///   unidirectional: n' = N_b, base = 0, n = max(−t, 0)  (the future falls into bucket 0);
///   E = n'/2;  β = base + n if n < E, else
///   base + min(n'−1, E + ⌊ln(n/E) / ln(L/E) · (n'−E)⌋)  (float32, truncated toward zero).
int64_t t5_relative_bucket(int64_t t, bool bidirectional, int64_t num_buckets = 32,
                           int64_t max_distance = 128);

struct T5BiasOptions {
  int64_t heads = 1;           // H
  int64_t num_buckets = 32;    // N_b
  int64_t max_distance = 128;  // L: distances >= L share the last bucket of their direction
  bool bidirectional = true;   // encoder-style split; false for causal decoders
  double init_std = 0.02;      // normal(0, init_std); HF T5 uses d_model^−1/2
  DType dtype = DType::kF32;
};

/// Bias-only relative encoding: ℓ_ij = s·q_i·k_j + B[β(t_ij), h], t_ij = j − i − query_offset.
/// T5 itself uses no scale (pass AttentionCall::scale = 1 for T5-faithful runs). One instance
/// can be shared by every layer of a stack, as T5 does (pass it to each layer as a custom
/// encoding). Parameter: `weight` [N_b, H] (nn.Embedding(N_b, H) layout).
/// Efficient form: the N_b×H table is gathered into a [H, Nq + Nk − 1] row per head (one entry
/// per distance), which the kernel reads as a Toeplitz view; the backward accumulates that row's
/// gradient directly (softmax_attention_relative): no N×N bias or bias gradient in either pass.
class T5RelativeBias : public RelativeAttentionEncoding {
 public:
  T5RelativeBias(const T5BiasOptions& options, Generator& gen);

  /// Bucket of every distance of the block, [Nq + Nk − 1] i64, row r ↔ t = r − (Nq−1) − off.
  Tensor buckets(int64_t nq, int64_t nk, int64_t query_offset) const;
  /// Differentiable [H, Nq + Nk − 1] table: table[h, r] = weight[bucket[r], h].
  Variable table(int64_t nq, int64_t nk, int64_t query_offset) const;
  /// Differentiable [1, H, Nq, Nk] bias b[0, h, i, j] = weight[β(j − i − off), h].
  Variable bias(int64_t nq, int64_t nk, int64_t query_offset) const;

  /// q: [B, H, Nq, D], k: [B, H, Nk, D], v: [B, H, Nk, Dv] → [B, H, Nq, Dv].
  Variable attend(const Variable& q, const Variable& k, const Variable& v,
                  const AttentionCall& call) const override;

  const T5BiasOptions& options() const { return options_; }
  const Variable& weight() const { return weight_; }

 private:
  T5BiasOptions options_;
  Variable weight_;
};

}  // namespace rota::nn
