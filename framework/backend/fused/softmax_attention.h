// Fused memory-efficient softmax attention kernels: scores, bias, masks, softmax, dropout, ·V.
#pragma once

#include <cstdint>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Which keys each query may see. Query i sits at key position `query_offset + i`.
/// Key j is hidden from query i when any of these hold:
///   causal && j > query_offset + i;  window > 0 && query_offset + i − j >= window;
///   key_padding_mask[b, j] == 0;  visibility_mask[i, j] == 0;
///   segment_ids[b, j] != segment_ids[b, query_offset + i] (packed documents).
/// The window (sliding-window attention: a causal query sees the previous W keys including
/// itself) is applied by skipping the key tiles entirely outside it, so the work is
/// O(Nq·W) rather than O(Nq·Nk).
struct SoftmaxAttentionMasks {
  bool causal = false;
  int64_t query_offset = 0;
  int64_t window = 0;       // W >= 1: keys further than W − 1 to the left are hidden; 0: none
  Tensor key_padding_mask;  // undefined or [B, Nk], 0 = padding
  Tensor visibility_mask;   // undefined or [Nq, Nk], 0 = hidden
  /// Packed documents: undefined or [B, Nk] integers, the document of each key position (query
  /// i's is that of position query_offset + i < Nk); a query sees only its own document's keys.
  Tensor segment_ids;
};

struct SoftmaxAttentionResult {
  Tensor out;        // [B, H, Nq, Dv]
  Tensor logsumexp;  // [B, H, Nq]; −inf for rows with every key hidden
};

/// q: [B, H, Nq, D], k: [B, H, Nk, D], v: [B, H, Nk, Dv]; bias: undefined or broadcastable to
/// [B, H, Nq, Nk] (e.g. [1, H, Nq, Nk], [B, 1, 1, Nk], [Nq, Nk]), same dtype as q, read in
/// place through its strides (broadcast, transposed and Toeplitz views cost no copy).
///   ℓ_ij = scale·(q_i·k_j) + bias_ij,  ℓ_ij = −inf where key j is hidden from query i,
///   p_ij = softmax_j(ℓ_ij),  p̃_ij = p_ij·keep_ij/(1−dropout_p),  out_i = Σ_j p̃_ij·v_j.
/// keep_ij is a pure function of (dropout_seed, b, h, i, j), so the backward regenerates it and
/// results do not depend on the thread count. Only `out` and the per-row logsumexp are stored:
/// O(B·H·Nq·Dv) memory, never an Nq×Nk matrix. Rows with every key hidden give out = 0 (and
/// zero gradients in the backward) instead of NaN.
SoftmaxAttentionResult softmax_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const Tensor& bias, double scale,
                                                 const SoftmaxAttentionMasks& masks,
                                                 double dropout_p = 0.0, uint64_t dropout_seed = 0);

struct SoftmaxAttentionGrads {
  Tensor dq, dk, dv;  // shapes of q, k, v
  Tensor dbias;       // reduced to bias's shape; undefined when bias is undefined
};

/// Which gradients the caller needs (the autograd op passes its inputs' requires_grad).
/// Skipping dbias saves a bias-shaped buffer and its accumulation (e.g. a constant ALiBi bias).
struct SoftmaxAttentionGradsNeeded {
  bool q = true, k = true, v = true, bias = true;
};

/// Recomputes the probabilities tile by tile from q, k, bias and logsumexp (flash-attention
/// style) and returns (with G_ij = p_ij·(dp_ij − Σ_j' p_ij'·dp_ij'), dp_ij = grad_out_i·v_j·
/// keep_ij/(1−dropout_p), Δ_i = Σ_j p_ij·dp_ij = grad_out_i·out_i):
///   dq_i = scale·Σ_j G_ij k_j,  dk_j = scale·Σ_i G_ij q_i,  dv_j = Σ_i p̃_ij grad_out_i,
///   dbias = sum_to_shape(G, bias.shape);
/// only the gradients in `needed` are computed (the others stay undefined).
/// out and logsumexp come from softmax_attention_forward with the same arguments.
/// Work is split over (batch, head) slices, grouped by the bias slice they share so that each
/// dbias element is summed in a fixed order: results are identical for every thread count.
/// Peak extra memory: a few tiles per thread, plus dbias (bias's shape) and, when few bias
/// slices are shared by many (batch, head) slices, up to a few partial dbias buffers.
SoftmaxAttentionGrads softmax_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const Tensor& bias, double scale,
                                                 const SoftmaxAttentionMasks& masks,
                                                 const Tensor& out, const Tensor& logsumexp,
                                                 const Tensor& grad_out, double dropout_p = 0.0,
                                                 uint64_t dropout_seed = 0,
                                                 const SoftmaxAttentionGradsNeeded& needed = {});

/// The dropout factors both kernels apply, materialised for tests: [B, H, Nq, Nk] holding
/// keep_ij/(1−p) ∈ {0, 1/(1−p)}, where keep_ij depends only on (seed, b, h, i, j).
Tensor softmax_attention_dropout_mask(int64_t batch, int64_t heads, int64_t nq, int64_t nk,
                                      double dropout_p, uint64_t dropout_seed,
                                      DType dtype = DType::kF32);

// ---- Toeplitz (relative-position) biases ----
// Bias-only relative encodings (T5, ALiBi) give b_ij that depends on (h, j − i) only. Their
// n_rel = Nq + Nk − 1 values per head are stored in ascending distance order (encodings.md
// section 3.1): row r of the table stands for t = r − (Nq − 1) − query_offset.

/// table: [H, Nq + Nk − 1] (any strides) → a [1, H, Nq, Nk] view of the same memory, no copy:
///   bias[0, h, i, j] = table[h, j − i + Nq − 1]   (stride −1 along i, +1 along j).
/// The fused kernel reads biases through their strides, so passing this view costs
/// O(H·(Nq + Nk)) memory instead of O(H·Nq·Nk).
Tensor relative_bias_view(const Tensor& table, int64_t nq, int64_t nk);

/// The backward for the Toeplitz bias relative_bias_view(table, Nq, Nk), table [H', Nq + Nk − 1]
/// with H' = H or 1: the same as softmax_attention_backward on that view, except that dbias is
/// the table's gradient [H', Nq + Nk − 1], dtable[h, j − i + Nq − 1] += G_bhij, accumulated
/// straight from the tiles — never the [1, H, Nq, Nk] buffer the generic form fills and then
/// reduces. (The forward needs nothing special: pass the view.)
SoftmaxAttentionGrads softmax_attention_backward_relative(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& table, double scale,
    const SoftmaxAttentionMasks& masks, const Tensor& out, const Tensor& logsumexp,
    const Tensor& grad_out, double dropout_p = 0.0, uint64_t dropout_seed = 0,
    const SoftmaxAttentionGradsNeeded& needed = {});

/// Adjoint of relative_bias_view: grad [..., H, Nq, Nk] (leading dims summed) → [H, Nq+Nk−1],
///   dtable[h, r] = Σ_{i, j: j − i + Nq − 1 = r} grad[..., h, i, j].
Tensor relative_bias_view_backward(const Tensor& grad, int64_t nq, int64_t nk);

}  // namespace rota::backend
