// Differentiable embedding lookup.
#pragma once

#include <cstdint>
#include <optional>

#include "framework/autograd/variable.h"

namespace rota {

/// out[..., :] = weight[ids[...], :]. ids: [...] i32 or i64 (not differentiable), weight:
/// [V, D] → out: [..., D]. The gradient scatter-adds rows of the output gradient into dW,
/// deterministically. padding_idx (negative counts from V, as in PyTorch) names a row that
/// receives no gradient. An id outside [0, V) is an error naming the op, the id and V.
Variable embedding(const Tensor& ids, const Variable& weight,
                   std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace rota
