// Differentiable delta-rule attention (DeltaNet, Gated DeltaNet) on the fused chunked kernel.
#pragma once

#include "framework/autograd/ops/linear_attention.h"
#include "framework/autograd/variable.h"

namespace rota {

/// Per slice (leading dims flattened), with state S [F, D] starting at zero:
///   S_t = α_t (I − β_t k_tᵀ k_t) S_{t−1} + β_t k_tᵀ v_t,  o_t = q_t S_t,  α_t = exp(g_t).
/// q, k: [..., N, F], v: [..., N, D], beta: [..., N] (in (0, 1), e.g. a sigmoid), log_gate:
/// undefined (DeltaNet, α ≡ 1) or [..., N] with g_t ≤ 0 (Gated DeltaNet) → [..., N, D].
/// Keys are used as given (normalise them first). Gradients for q, k, v, beta and log_gate.
/// segment_ids: undefined or [B, N] integers, packed documents (q as [B, H, N, F]): each
/// document runs as a sequence of its own (backend::delta_rule_attention_forward).
Variable delta_rule_attention(const Variable& q, const Variable& k, const Variable& v,
                              const Variable& beta, const Variable& log_gate,
                              int64_t chunk_size = 64, const Tensor& segment_ids = Tensor());

/// delta_rule_attention continuing from an earlier segment: initial_state S₀ [..., F, D]
/// (undefined = zeros) replaces the zero start state, and the outputs are o and the final state
/// S_N (backend::delta_rule_attention_forward). Gradients reach q, k, v, beta, log_gate and S₀
/// from both outputs, so segments chained through their states backpropagate as one sequence.
CausalAttentionWithState delta_rule_attention_with_state(const Variable& q, const Variable& k,
                                                         const Variable& v, const Variable& beta,
                                                         const Variable& log_gate,
                                                         const Variable& initial_state,
                                                         int64_t chunk_size = 64,
                                                         const Tensor& segment_ids = Tensor());

}  // namespace rota
