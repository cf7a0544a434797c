// Input tensors for tests (see tensor_factory.h).
#include "tests/support/tensor_factory.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace rota::testing {

Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return randn(shape, gen, 0.0, 1.0, dtype);
}

Tensor reversed_randn(const Shape& shape, Generator& gen) {
  const Shape reversed(shape.rbegin(), shape.rend());
  std::vector<int64_t> order;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) order.push_back(d);
  return randn(reversed, gen, 0.0, 1.0, DType::kF64).permute(order);
}

Tensor non_contiguous(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  const Tensor t = reversed_randn(shape, gen);
  EXPECT_FALSE(t.is_contiguous()) << "shape " << shape_str(shape);
  return t;
}

Qkv random_qkv(Generator& gen, int64_t b, int64_t h, int64_t n, int64_t f, int64_t d, DType dtype) {
  Tensor q = randn({b, h, n, f}, gen, 0.0, 1.0, dtype);
  Tensor k = randn({b, h, n, f}, gen, 0.0, 1.0, dtype);
  Tensor v = randn({b, h, n, d}, gen, 0.0, 1.0, dtype);
  return {q, k, v};
}

Tensor l2_normalise_rows(const Tensor& x) {
  std::vector<double> a = x.to_double_vector();
  const int64_t f = x.size(-1);
  for (size_t r = 0; r < a.size(); r += f) {
    double n2 = 0;
    for (int64_t e = 0; e < f; ++e) n2 += a[r + e] * a[r + e];
    const double inv = 1.0 / std::sqrt(n2);
    for (int64_t e = 0; e < f; ++e) a[r + e] *= inv;
  }
  return tensor_from(a, x.shape(), x.dtype());
}

Tensor iota(const Shape& shape, DType dtype) {
  std::vector<double> values(shape_numel(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  return tensor_from(values, shape, dtype);
}

}  // namespace rota::testing
