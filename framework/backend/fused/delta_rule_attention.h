// Delta-rule linear attention kernels (DeltaNet, Gated DeltaNet): chunked, recurrent, one step.
#pragma once

#include "framework/tensor/tensor.h"

namespace rota::backend {

// Shapes: q, k: [..., N, F], v: [..., N, D], beta: [..., N], log_gate: undefined or [..., N],
// all with the same leading dims (flattened to G, typically G = B·H) and one dtype (f32 or
// f64; other dtypes are an error, as for the other linear attention kernels).
// Per slice the state S is F×D (keys index rows) and, with k_t, q_t row vectors in R^F,
//   S_t = α_t (I − β_t k_tᵀ k_t) S_{t−1} + β_t k_tᵀ v_t,   o_t = q_t S_t,   S_0 = 0,
// α_t = exp(g_t) with g_t = log_gate[t] ≤ 0 (Gated DeltaNet), α ≡ 1 without log_gate
// (DeltaNet). Keys are used as given (callers L2-normalise them; the kernels do not assume it).
// g_t ≤ 0 keeps every decay factor ≤ 1; it is expected, not checked (positive gates still give
// the recurrence's values as long as they stay finite).

/// Chunked forward (UT / WY representation): per chunk of C rows with cumulative log-gates
/// b_r relative to the chunk start, γ_r = e^(b_r), Γ_rs = e^(b_r − b_s) (all ≤ 1),
///   L = I + strictly_lower(diag(β) K Kᵀ ⊙ Γ),  U = L⁻¹ diag(β) (V − diag(γ) K S)   [C, D]
///   O = diag(γ) Q S + (Q Kᵀ ⊙ Γ ⊙ tril) U,      S ← γ_C S + (diag(e^(b_C − b)) K)ᵀ U
/// (U = T V − W S with T = L⁻¹ diag(β), W = T diag(γ) K; L⁻¹ applied by forward substitution).
/// Work O(N·(C·(F+D) + F·D)) and memory O(C² + C·(F+D) + F·D) per thread. Returns [..., N, D].
///
/// State carry (a long sequence run segment by segment): initial_state S₀ [..., F, D] (leading
/// dims as q's; undefined = zeros) replaces S_0 = 0 above, so the first chunk is one like any
/// other; with final_state set, *final_state = S_N [..., F, D] (dense), the next segment's S₀.
///
/// Packed documents: segment_ids [B, N] (integers, for q [B, H, N, F]; a document's rows
/// contiguous; undefined = one document per row): each document is computed as a sequence of
/// its own (the state restarts from zero at its first row); S₀ continues the row's first
/// document and S_N is its last one's state (fused/document_ranges.h).
Tensor delta_rule_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& beta, const Tensor& log_gate = Tensor(),
                                    int64_t chunk_size = 64, const Tensor& initial_state = Tensor(),
                                    Tensor* final_state = nullptr,
                                    const Tensor& segment_ids = Tensor());

struct DeltaRuleGrads {
  Tensor dq;               // [..., N, F]
  Tensor dk;               // [..., N, F]
  Tensor dv;               // [..., N, D]
  Tensor dbeta;            // [..., N]
  Tensor dlog_gate;        // [..., N]; undefined when log_gate is
  Tensor d_initial_state;  // [..., F, D] (with an initial state only)
};

/// Backward of the chunked form (inputs as the forward, grad_out [..., N, D]): a forward sweep
/// stores the chunk-start states (O((N/C)·F·D) per thread), then a reverse sweep over chunks
/// carries dS = ∂L/∂S and, inside a chunk, differentiates the UT formulas explicitly; the
/// triangular solve's backward is the solve with Lᵀ (back substitution).
/// State carry: initial_state as in the forward; grad_final_state dL/dS_N [..., F, D]
/// (undefined = zeros) is the dS after the last chunk; with an initial state, d_initial_state =
/// dL/dS₀ (the dS before the first chunk), the previous segment's grad_final_state.
/// segment_ids as in the forward.
DeltaRuleGrads delta_rule_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& beta, const Tensor& log_gate,
                                             const Tensor& grad_out, int64_t chunk_size = 64,
                                             const Tensor& initial_state = Tensor(),
                                             const Tensor& grad_final_state = Tensor(),
                                             const Tensor& segment_ids = Tensor());

/// Token-by-token reference (the recurrence as written; tests only). Returns [..., N, D].
Tensor delta_rule_attention_recurrent(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& beta, const Tensor& log_gate = Tensor());

/// One generation step: q, k [G, F], v [G, D], beta [G], log_gate undefined or [G], state
/// [G, F, D] (contiguous) updated in place to S = α (I − β kᵀk) S + β kᵀ v; returns o = q S
/// [G, D]. Feeding tokens one at a time reproduces the chunked form.
Tensor delta_rule_attention_step(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& beta, const Tensor& log_gate, Tensor& state);

}  // namespace rota::backend
