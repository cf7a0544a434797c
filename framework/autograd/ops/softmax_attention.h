// Differentiable fused softmax attention (the memory-efficient kernel pair with autograd).
#pragma once

#include "framework/autograd/variable.h"
#include "framework/backend/fused/softmax_attention.h"
#include "framework/tensor/random.h"

namespace rota {

/// q: [B, H, Nq, D], k: [B, H, Nk, D], v: [B, H, Nk, Dv] → [B, H, Nq, Dv].
///   ℓ = scale·(q·kᵀ) + bias (bias may be an undefined Variable, else broadcastable to
///   [B, H, Nq, Nk]); hidden entries (masks) are −inf; p = softmax_j(ℓ); dropout on p; out = p·v.
/// Gradients for q, k, v and bias. When dropout_p > 0, one 64-bit seed is drawn from `gen`
/// per call (gen is required then); dropout_p == 0 leaves gen untouched.
/// Rows where every key is hidden give 0 output and 0 gradients.
Variable softmax_attention(const Variable& q, const Variable& k, const Variable& v,
                           const Variable& bias /* may be undefined */, double scale,
                           const backend::SoftmaxAttentionMasks& masks, double dropout_p = 0.0,
                           Generator* gen = nullptr);

/// softmax_attention with the Toeplitz bias of a bias-only relative encoding (T5, ALiBi):
/// table [H or 1, Nq + Nk − 1], row r ↔ distance t = r − (Nq − 1) − query_offset, and
/// bias[b, h, i, j] = table[h, j − i + Nq − 1]. The same as softmax_attention(q, k, v,
/// relative_position_bias(table, Nq, Nk), ...), but the table's gradient is accumulated straight
/// from the tiles, so neither pass forms an N×N bias or bias gradient.
Variable softmax_attention_relative(const Variable& q, const Variable& k, const Variable& v,
                                    const Variable& table, double scale,
                                    const backend::SoftmaxAttentionMasks& masks,
                                    double dropout_p = 0.0, Generator* gen = nullptr);

/// Toeplitz bias of a bias-only relative encoding: table [H, Nq + Nk − 1] (row r ↔ distance
/// t = r − (Nq − 1) − query_offset) → [1, H, Nq, Nk] with bias[0, h, i, j] = table[h, j − i +
/// Nq − 1], as a view (no copy; backend::relative_bias_view). Its gradient sums each diagonal
/// back into the table.
Variable relative_position_bias(const Variable& table, int64_t nq, int64_t nk);

}  // namespace rota
