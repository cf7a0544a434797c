// Differentiable linear attention without a denominator (fused kernels; see backend).
#pragma once

#include "framework/autograd/variable.h"

namespace rota {

/// Causal: o_i = Σ_{j≤i} (q_i·k_j) v_j. q, k: [..., N, F], v: [..., N, D] → [..., N, D].
/// Chunked kernel (chunk_size rows per block); gradients for q, k and v. decay: optional
/// fixed per-head factors [H] (q as [B, H, N, F]) weighting pair (i, j) by γ_h^(i−j).
Variable causal_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                 int64_t chunk_size = 64, const Tensor& decay = Tensor());

/// Bidirectional: O = Q (Kᵀ diag(m) V). q, k: [B, H, N, F], v: [B, H, N, D]; key_mask:
/// undefined or [B, N] (1 = real key, 0 = padding; padded keys contribute nothing).
Variable bidirectional_linear_attention(const Variable& q, const Variable& k, const Variable& v,
                                        const Tensor& key_mask = Tensor());

}  // namespace rota
