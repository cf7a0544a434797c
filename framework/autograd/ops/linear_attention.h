// Differentiable linear attention without a denominator (fused kernels; see backend).
#pragma once

#include "framework/autograd/variable.h"

namespace rota {

/// Causal: o_i = Σ_{j≤i} (q_i·k_j) v_j. q, k: [..., N, F], v: [..., N, D] → [..., N, D].
/// Chunked kernel (chunk_size rows per block); gradients for q, k and v. decay: optional
/// fixed per-head factors [H] (q as [B, H, N, F]) weighting pair (i, j) by γ_h^(i−j).
/// segment_ids: undefined or [B, N] integers, packed documents (q as [B, H, N, F]): attention
/// and state stay inside each document (backend::causal_linear_attention_forward).
Variable causal_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                 int64_t chunk_size = 64, const Tensor& decay = Tensor(),
                                 const Tensor& segment_ids = Tensor());

/// The causal form's outputs with state carry: o [..., N, D] and the final state S_N [..., F, D].
struct CausalAttentionWithState {
  Variable output;
  Variable final_state;
};

/// causal_linear_attention continuing from an earlier segment: initial_state S₀ [..., F, D]
/// (leading dims as q's; undefined = zeros) is the state the keys before position 0 left, so
/// o_i = Σ_{j≤i} γ^(i−j) (q_i·k_j) v_j + γ^(i+1) q_i S₀, and final_state = S_N feeds the next
/// segment (backend::causal_linear_attention_forward). Gradients reach q, k, v and S₀ from both
/// outputs, so segments chained through their states backpropagate as one sequence. With
/// segment_ids, S₀ continues each row's first document and S_N is its last one's.
CausalAttentionWithState causal_linear_attention_with_state(
    const Variable& q, const Variable& k, const Variable& v, const Variable& initial_state,
    int64_t chunk_size = 64, const Tensor& decay = Tensor(), const Tensor& segment_ids = Tensor());

/// Bidirectional: O = Q (Kᵀ diag(m) V). q, k: [B, H, N, F], v: [B, H, N, D]; key_mask:
/// undefined or [B, N] (1 = real key, 0 = padding; padded keys contribute nothing);
/// segment_ids: undefined or [B, N], packed documents (each attends to its own keys only).
Variable bidirectional_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                        const Tensor& key_mask = Tensor(),
                                        const Tensor& segment_ids = Tensor());

}  // namespace rota
