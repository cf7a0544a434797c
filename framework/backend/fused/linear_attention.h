// Linear attention kernels without a denominator: causal (chunked), bidirectional, recurrent.
#pragma once

#include "framework/tensor/tensor.h"

namespace rota::backend {

// Shapes: q, k: [..., N, F] and v: [..., N, D] with the same leading dims (flattened to G,
// typically G = B·H). Features are used as given (φ and LRPE are applied before).

/// Causal: o_i = Σ_{j≤i} (q_i·k_j) v_j, by the chunked algorithm: inside a chunk of C rows the
/// masked product tril(Q_c K_cᵀ) V_c, across chunks a running state S = Σ k_jᵀ v_j (F×D).
/// Never builds an N×N matrix; work O(N·C·(F+D) + N·F·D), memory O(N·D + F·D) per thread.
/// Optional decay: [H] per-head factors γ_h in (0, 1] for q [B, H, N, F], weighting pairs by
/// γ^(i−j) (PermuteFormer's relative decay), computed with every power ≤ 1 so long sequences
/// cannot overflow.
///
/// State carry (a long sequence run segment by segment): initial_state S₀ [..., F, D] (leading
/// dims as q's; undefined = zeros) is the state of the keys before position 0, so
///   o_i = Σ_{j≤i} γ^(i−j) (q_i·k_j) v_j + γ^(i+1) q_i S₀,
/// exactly what the same positions give when they follow the earlier keys in one sequence. With
/// final_state set, *final_state = S_N = γ^N S₀ + Σ_j γ^(N−1−j) k_jᵀ v_j [..., F, D] (dense), the
/// next segment's S₀.
///
/// Packed documents: segment_ids [B, N] (integers, for q [B, H, N, F]; undefined = one
/// document per row) marks which document each row belongs to; a document's rows are
/// contiguous. Attention and the state never cross documents: each document is computed as a
/// sequence of its own (its chunks start at its first row), so
///   o_i = Σ_{j≤i, doc(j) = doc(i)} γ^(i−j) (q_i·k_j) v_j,
/// S₀ continues the row's first document only and S_N is the state of its last one.
Tensor causal_linear_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                       int64_t chunk_size = 64, const Tensor& decay = Tensor(),
                                       const Tensor& initial_state = Tensor(),
                                       Tensor* final_state = nullptr,
                                       const Tensor& segment_ids = Tensor());

struct LinearAttentionGrads {
  Tensor dq;  // [..., N, F]
  Tensor dk;  // [..., N, F]
  Tensor dv;  // [..., N, D], dense in v's memory order (a head view of [B, N, H, D] gives that)
  Tensor d_initial_state;  // [..., F, D] (causal with an initial state only)
};

/// Backward of the causal form: a forward sweep over chunks rebuilds S for
/// dQ_c = tril(dO_c V_cᵀ) K_c + dO_c S_prevᵀ; a reverse sweep carries R = Σ_{later} Q_tᵀ dO_t
/// for dK_c = tril(dO_c V_cᵀ)ᵀ Q_c + V_c Rᵀ and dV_c = tril(Q_c K_cᵀ)ᵀ dO_c + K_c R.
/// State carry: initial_state as in the forward; grad_final_state dL/dS_N [..., F, D]
/// (undefined = zeros) enters R as a query at position N − 1 would; with an initial state,
/// d_initial_state = dL/dS₀ = Σ_i γ^(i+1) q_iᵀ dO_i + γ^N dL/dS_N, the previous segment's
/// grad_final_state. segment_ids as in the forward (dL/dS₀ from the first document, dL/dS_N
/// into the last).
LinearAttentionGrads causal_linear_attention_backward(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& grad_out,
    int64_t chunk_size = 64, const Tensor& decay = Tensor(), const Tensor& initial_state = Tensor(),
    const Tensor& grad_final_state = Tensor(), const Tensor& segment_ids = Tensor());

/// Reference quadratic form, O = (tril(Q Kᵀ)) V with the N×N matrix materialised. For tests
/// and benchmarks only.
Tensor causal_linear_attention_quadratic(const Tensor& q, const Tensor& k, const Tensor& v);

/// Bidirectional: O = Q (Kᵀ diag(m) V) with m the key mask. key_mask: undefined (all keys) or
/// [B, N] with 1 for real keys and 0 for padding, where q is [B, H, N, F] (shared by heads).
/// segment_ids [B, N] (packed documents, contiguous; undefined = one per row): each document
/// attends only to its own keys, O_doc = Q_doc (K_docᵀ diag(m) V_doc).
Tensor bidirectional_linear_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const Tensor& key_mask = Tensor(),
                                              const Tensor& segment_ids = Tensor());

/// With KV = Kᵀ diag(m) V: dQ = dO KVᵀ, dKV = Qᵀ dO, dK_t = m_t V_t dKVᵀ, dV_t = m_t K_t dKV
/// (per document with segment_ids).
LinearAttentionGrads bidirectional_linear_attention_backward(const Tensor& q, const Tensor& k,
                                                             const Tensor& v,
                                                             const Tensor& grad_out,
                                                             const Tensor& key_mask = Tensor(),
                                                             const Tensor& segment_ids = Tensor());

/// One generation step. q, k: [G, F], v: [G, D], state: [G, F, D] updated in place
/// (S = γ S + kᵀ v, γ = 1 without decay; decay [H] applies to slice g as decay[g % H]),
/// returns o = q S: [G, D]. Feeding tokens one at a time reproduces the causal
/// form exactly; each step costs O(F·D) however long the prefix.
Tensor causal_linear_attention_step(const Tensor& q, const Tensor& k, const Tensor& v,
                                    Tensor& state, const Tensor& decay = Tensor());

}  // namespace rota::backend
