// Absolute position embeddings.
#include "framework/nn/position/absolute.h"

#include <algorithm>
#include <cmath>

#include "framework/autograd/ops/embedding.h"
#include "framework/autograd/ops/shape.h"
#include "framework/nn/init.h"

namespace rota::nn {

SinusoidalPositionEmbedding::SinusoidalPositionEmbedding(int64_t dim, DType dtype, double base)
    : dim_(dim), dtype_(dtype), base_(base) {
  ROTA_CHECK(dim > 0, "SinusoidalPositionEmbedding: dim must be positive, got {}", dim);
}

Variable SinusoidalPositionEmbedding::forward(int64_t n, int64_t offset) const {
  ROTA_CHECK(n >= 0 && offset >= 0, "SinusoidalPositionEmbedding: bad range n={} offset={}", n,
             offset);
  std::vector<double> table(n * dim_);
  for (int64_t s = 0; s < n; ++s) {
    const double pos = static_cast<double>(offset + s);
    for (int64_t c = 0; c < dim_; ++c) {
      const double omega = std::pow(base_, -2.0 * static_cast<double>(c / 2) / dim_);
      table[s * dim_ + c] = c % 2 == 0 ? std::sin(pos * omega) : std::cos(pos * omega);
    }
  }
  return Variable(tensor_from(table, {n, dim_}, dtype_));
}

Variable SinusoidalPositionEmbedding::at(const Tensor& positions) const {
  const std::vector<double> where = positions.to_double_vector();
  double largest = 0;
  for (double p : where) {
    ROTA_CHECK(p >= 0, "SinusoidalPositionEmbedding: position {} < 0", p);
    largest = std::max(largest, p);
  }
  const auto rows = static_cast<int64_t>(largest) + 1;
  return embedding(positions, forward(where.empty() ? 0 : rows, 0));
}

LearnedPositionEmbedding::LearnedPositionEmbedding(int64_t max_positions, int64_t dim,
                                                   Generator& gen, double init_std, DType dtype)
    : max_positions_(max_positions) {
  ROTA_CHECK(max_positions > 0 && dim > 0,
             "LearnedPositionEmbedding: sizes must be positive, got {} x {}", max_positions, dim);
  Tensor w = Tensor::empty({max_positions, dim}, dtype);
  init::normal_(w, gen, 0.0, init_std);
  weight_ = register_parameter("weight", w);
}

Variable LearnedPositionEmbedding::forward(int64_t n, int64_t offset) const {
  ROTA_CHECK(offset >= 0 && offset + n <= max_positions_,
             "LearnedPositionEmbedding: positions {}..{} requested but the learned table covers "
             "only {} positions (learned absolute positions cannot extrapolate)",
             offset, offset + n - 1, max_positions_);
  return narrow(weight_, 0, offset, n);
}

Variable LearnedPositionEmbedding::at(const Tensor& positions) const {
  for (double p : positions.to_double_vector()) {
    ROTA_CHECK(p >= 0 && p < static_cast<double>(max_positions_),
               "LearnedPositionEmbedding: position {} requested but the learned table covers only "
               "{} positions (learned absolute positions cannot extrapolate)",
               p, max_positions_);
  }
  return embedding(positions, weight_);
}

}  // namespace rota::nn
