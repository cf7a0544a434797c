// The relative shift (skew): X[i, r] indexed by relative distance → S[i, j] indexed by key.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// The relative distances t_ij = j − i − query_offset one block of n_q queries and n_k keys
/// takes (encodings.md section 3.1): t_min … t_max, count = n_q + n_k − 1 values. Row r of a
/// relative table in ascending-t order stands for t = t_min + r.
struct RelativeDistances {
  int64_t t_min = 0;  // −(query_offset + n_q − 1): last query, first key
  int64_t t_max = 0;  // n_k − 1 − query_offset: first query, last key
  int64_t count = 0;  // n_rel = n_q + n_k − 1 (0 when either length is 0)
};
RelativeDistances relative_distances(int64_t n_q, int64_t n_k, int64_t query_offset);

/// The skew (encodings.md 3.1, realisations A/C), optionally through a column map c:
///   x: [..., n_q, n_x] → s: [..., n_q, n_k],  s[..., i, j] = x[..., i, c(j − i + n_q − 1)].
/// Without a map c is the identity and n_x ≥ n_q + n_k − 1 (extra columns on the right are
/// ignored). A map (length ≥ n_q + n_k − 1, values in [0, n_x)) sends each relative row to a
/// column of a smaller bucket table, e.g. Shaw's clipped distances: then x = Q·E_neededᵀ has
/// only as many columns as distinct buckets and no n_q × n_rel intermediate is formed.
/// Output contiguous; f32 / f64.
Tensor relative_shift_forward(const Tensor& x, int64_t n_k,
                              const std::vector<int64_t>& column_map = {});

/// The adjoint (unskew, encodings.md 3.5): grad_s: [..., n_q, n_k] → dx: [..., n_q, n_x],
///   dx[..., i, c(j − i + n_q − 1)] += grad_s[..., i, j], zero elsewhere.
/// With the identity map distinct j of a row hit distinct columns (a plain scatter); with a
/// bucket map they accumulate, in order of j within the row (deterministic).
Tensor relative_shift_backward(const Tensor& grad_s, int64_t n_x,
                               const std::vector<int64_t>& column_map = {});

/// ESPnet/WeNet's pad-and-reshape rel_shift generalised with an explicit n_k (encodings.md
/// 3.3), kept as a reference realisation for tests: x: [..., T1, T2] with T2 ≥ T1 + n_k − 1 →
/// prepend a zero column, view as [..., T2 + 1, T1], drop the first row, view as [..., T1, T2],
/// keep the first n_k columns. Returns [..., T1, n_k] (contiguous).
Tensor relative_shift_pad_reshape(const Tensor& x, int64_t n_k);

}  // namespace rota::backend
