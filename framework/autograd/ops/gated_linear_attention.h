// Differentiable causal gated linear attention (GLA / Mamba-2 gates; fused kernels, see backend).
#pragma once

#include "framework/autograd/ops/linear_attention.h"
#include "framework/autograd/variable.h"

namespace rota {

/// o_i = Σ_{j≤i} Σ_f q_if k_jf exp(b_if − b_jf) v_j with b = cumsum_t(log_gate), i.e. the
/// recurrence S_t = diag(exp(g_t)) S_{t−1} + k_tᵀ v_t, o_t = q_t S_t. q, k: [..., N, F],
/// v: [..., N, D], log_gate: [..., N, F] (per key channel, GLA) or [..., N, 1] (per step,
/// Mamba-2), finite and ≤ 0 → [..., N, D]. Chunked kernel; gradients for q, k, v and log_gate.
/// segment_ids: undefined or [B, N] integers, packed documents (q as [B, H, N, F]): each
/// document runs as a sequence of its own (backend::gated_linear_attention_forward).
Variable gated_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                const Variable& log_gate, int64_t chunk_size = 64,
                                const Tensor& segment_ids = Tensor());

/// gated_linear_attention continuing from an earlier segment: initial_state S₀ [..., F, D]
/// (undefined = zeros) is the state before row 0, and the outputs are o and the state after
/// the last row S_N (backend::gated_linear_attention_forward). Gradients reach q, k, v,
/// log_gate and S₀ from both outputs, so segments chained through their states backpropagate as
/// one sequence.
CausalAttentionWithState gated_linear_attention_with_state(
    const Variable& q, const Variable& k, const Variable& v, const Variable& log_gate,
    const Variable& initial_state, int64_t chunk_size = 64, const Tensor& segment_ids = Tensor());

}  // namespace rota
