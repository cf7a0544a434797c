// Input tensors for tests: seeded random values, reversed-layout views, attention q/k/v, ramps.
#pragma once

#include <cstdint>

#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"

namespace rota::testing {

/// N(0, 1) values of `shape` from a fresh Generator(seed), stored as `dtype`.
Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype = DType::kF64);

/// N(0, 1) f64 values drawn from `gen` into the reversed shape, then permuted back to `shape`:
/// a view whose dims are stored in reverse order (non-contiguous when two or more dims exceed 1).
Tensor reversed_randn(const Shape& shape, Generator& gen);

/// reversed_randn with a fresh Generator(seed), adding a test failure unless the result is
/// non-contiguous (for checking that an op handles strided inputs).
Tensor non_contiguous(const Shape& shape, uint64_t seed);

/// Attention inputs: queries and keys of [b, h, n, f], values of [b, h, n, d].
struct Qkv {
  Tensor q, k, v;
};

/// N(0, 1) q, k and v drawn from `gen` in that order, stored as `dtype`.
Qkv random_qkv(Generator& gen, int64_t b, int64_t h, int64_t n, int64_t f, int64_t d,
               DType dtype = DType::kF64);

/// Rows of x [..., F] scaled to unit L2 norm (computed in double, stored as x's dtype): the
/// delta rule's keys.
Tensor l2_normalise_rows(const Tensor& x);

/// 0, 1, 2, ... (exact) of `shape`, stored as `dtype`.
Tensor iota(const Shape& shape, DType dtype = DType::kF64);

}  // namespace rota::testing
