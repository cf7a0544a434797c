// Differentiable causal gated linear attention (GLA / Mamba-2 gates; fused kernels, see backend).
#pragma once

#include "framework/autograd/variable.h"

namespace rota {

/// o_i = Σ_{j≤i} Σ_f q_if k_jf exp(b_if − b_jf) v_j with b = cumsum_t(log_gate), i.e. the
/// recurrence S_t = diag(exp(g_t)) S_{t−1} + k_tᵀ v_t, o_t = q_t S_t. q, k: [..., N, F],
/// v: [..., N, D], log_gate: [..., N, F] (per key channel, GLA) or [..., N, 1] (per step,
/// Mamba-2), finite and ≤ 0 → [..., N, D]. Chunked kernel; gradients for q, k, v and log_gate.
Variable gated_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                const Variable& log_gate, int64_t chunk_size = 64);

}  // namespace rota
