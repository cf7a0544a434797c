// Differentiable relative shift (skew), its adjoint (unskew) and the relative-table logits.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/autograd/variable.h"

namespace rota {

/// x: [..., n_q, n_x] → [..., n_q, n_k], out[..., i, j] = x[..., i, c(j − i + n_q − 1)] with c
/// the column map (empty = identity, then n_x ≥ n_q + n_k − 1); see
/// backend::relative_shift_forward. Backward: the unskew scatter.
Variable relative_shift(const Variable& x, int64_t n_k, std::vector<int64_t> column_map = {});

/// The adjoint of relative_shift: s: [..., n_q, n_k] → [..., n_q, n_x],
/// out[..., i, c(j − i + n_q − 1)] += s[..., i, j]. Turns attention probabilities into weights
/// per relative row (Shaw's value table). Backward: relative_shift.
Variable relative_unshift(const Variable& s, int64_t n_x, std::vector<int64_t> column_map = {});

/// a[..., i, j] = q_i · rows[c(j − i + n_q − 1)]: the relative term of a table-based encoding,
/// computed as X = q·rowsᵀ ([..., n_q, n_x], one product over the needed rows only) followed by
/// the skew. q: [B, H, n_q, D]; rows: [n_x, D] (shared by heads) or [H, n_x, D] (per head).
/// Returns [B, H, n_q, n_k].
Variable relative_logits(const Variable& q, const Variable& rows, int64_t n_k,
                         std::vector<int64_t> column_map = {});

}  // namespace rota
