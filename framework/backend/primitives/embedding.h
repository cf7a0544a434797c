// Embedding lookup (a row gather) and its backward (a deterministic row scatter-add).
#pragma once

#include <cstdint>
#include <optional>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// out[..., :] = weight[ids[...], :].
/// ids: [...] i32 or i64, each in [0, V); weight: [V, D] f32, f64 or bf16 → out: [..., D]
/// (weight's dtype). An out-of-range id is an error naming the id, its position and V.
Tensor embedding(const Tensor& ids, const Tensor& weight);

/// grad_weight[v, :] = Σ over positions p with ids[p] == v of grad_out[p, :], except the row
/// padding_idx (when given), which gets no gradient.
/// ids: [...] i32 or i64, grad_out: [..., D] f32 or f64 → grad_weight: [V, D] (grad_out's
/// dtype), V = num_embeddings. Deterministic and atomic-free: each thread owns a slice of the
/// D columns and adds rows in position order, so repeated ids sum in a fixed order.
Tensor embedding_backward(const Tensor& ids, const Tensor& grad_out, int64_t num_embeddings,
                          std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace rota::backend
