// Causal gated linear attention kernels (GLA per-channel gates, Mamba-2 scalar gates).
#pragma once

#include "framework/tensor/tensor.h"

namespace rota::backend {

// Shapes: q, k: [..., N, F], v: [..., N, D] and log_gate: [..., N, F] (one gate per key channel,
// GLA: g = log σ(x W_α) / τ) or [..., N, 1] (one gate per step broadcast over F, Mamba-2 / SSD:
// g = −Δ·A), all with the same leading dims (flattened to G, typically G = B·H). The kind is
// told by log_gate's last dim. Gates must be finite and ≤ 0 (decays in (0, 1]); anything else is
// refused. f32 and f64 (like the other linear-attention kernels; bf16 is refused).
//
// Per group, the recurrence
//   S_t = diag(exp(g_t)) S_{t−1} + k_tᵀ v_t   (S: F×D),   o_t = q_t S_t,
// equivalently o_i = Σ_{j≤i} Σ_f q_if k_jf exp(b_if − b_jf) v_j with b = cumsum_t(g).

/// Chunked forward, O(N): chunks of C rows carry the state S across chunks (decayed by each
/// chunk's total gate); inside a chunk the per-channel form splits rows into sub-blocks of 16,
/// reaches earlier keys of the chunk through the row before the sub-block (two factors ≤ 1) and
/// forms the pairs inside a sub-block as exp(b_i − b_j) directly; the scalar form weights the
/// masked score block by its decay matrix. Every exponential taken is of a value ≤ 0, so no gate
/// strength overflows. q, k: [..., N, F], v: [..., N, D], log_gate: [..., N, F|1] → [..., N, D].
///
/// State carry (a long sequence run segment by segment): initial_state S₀ [..., F, D] (leading
/// dims as q's; undefined = zeros) is the state before row 0, so o_i gains (q_i ⊙ e^(b_i)) S₀;
/// with final_state set, *final_state = S_N, the state after row N − 1 [..., F, D] (dense), the
/// next segment's S₀. Chained segments give the whole sequence's outputs.
///
/// Packed documents: segment_ids [B, N] (integers, for q [B, H, N, F]; a document's rows
/// contiguous; undefined = one document per row): each document is computed as a sequence of
/// its own, so the state restarts from zero at its first row (whose gate then multiplies
/// nothing) and no pair crosses documents; S₀ continues the row's first document and S_N is
/// its last one's state (fused/document_ranges.h).
Tensor gated_linear_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& log_gate, int64_t chunk_size = 64,
                                      const Tensor& initial_state = Tensor(),
                                      Tensor* final_state = nullptr,
                                      const Tensor& segment_ids = Tensor());

struct GatedLinearAttentionGrads {
  Tensor dq;               // [..., N, F]
  Tensor dk;               // [..., N, F]
  Tensor dv;               // [..., N, D], dense in v's memory order
  Tensor dlog_gate;        // log_gate's shape: [..., N, F] or [..., N, 1]
  Tensor d_initial_state;  // [..., F, D] (with an initial state only)
};

/// Backward. A forward sweep rebuilds S for the inter-chunk part of dq; a reverse sweep carries
/// R = ∂L/∂S at the chunk end for dk, dv and does the intra-chunk parts of dq, dk, dv. The gate
/// gradient uses db_i = q_i ⊙ dq_i − k_i ⊙ dk_i (∂L/∂b_i, with dq, dk the gradients of the
/// ungated q, k and the pair j = i, which cancels, left out) and dg_t = Σ_{i≥t} db_i (summed over
/// F for a scalar gate), accumulated in f64. Shapes as the forward; grad_out: [..., N, D].
/// State carry: initial_state as in the forward; grad_final_state dL/dS_N [..., F, D]
/// (undefined = zeros) is the reverse state R of the last chunk (S_N is the state at row N − 1)
/// and adds Σ_d (dL/dS_N ⊙ S_N) to the last row's db; with an initial state,
/// d_initial_state = dL/dS₀, the previous segment's grad_final_state.
/// segment_ids as in the forward.
GatedLinearAttentionGrads gated_linear_attention_backward(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& log_gate,
    const Tensor& grad_out, int64_t chunk_size = 64, const Tensor& initial_state = Tensor(),
    const Tensor& grad_final_state = Tensor(), const Tensor& segment_ids = Tensor());

/// Reference: the masked N×N form o_i = Σ_{j≤i} Σ_f q_if k_jf exp(b_if − b_jf) v_j with b the
/// cumulative sum of the gates in f64. O(N²·F). Tests only. Shapes as the forward.
Tensor gated_linear_attention_quadratic(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& log_gate);

/// One generation step: q, k: [G, F], v: [G, D], log_gate: [G, F] or [G, 1], state: [G, F, D]
/// (contiguous) updated in place to S = diag(exp(g)) S + kᵀ v; returns o = q S: [G, D]. Feeding
/// tokens one at a time reproduces the chunked form.
Tensor gated_linear_attention_step(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& log_gate, Tensor& state);

}  // namespace rota::backend
