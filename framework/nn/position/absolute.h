// Absolute position embeddings added to token embeddings: sinusoidal (fixed) and learned.
#pragma once

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// Vaswani et al.'s fixed table, channels interleaved: pe[s, 2i] = sin(s·ω_i),
/// pe[s, 2i+1] = cos(s·ω_i), ω_i = 10000^(−2i/E). Defined for any position.
class SinusoidalPositionEmbedding : public Module {
 public:
  SinusoidalPositionEmbedding(int64_t dim, DType dtype = DType::kF32, double base = 10000.0);
  /// Rows for positions offset .. offset+n−1: [n, dim] (constant, no gradient).
  Variable forward(int64_t n, int64_t offset = 0) const;
  /// The rows of per-token positions (i64 [B, N], each >= 0): [B, N, dim] (packed documents,
  /// whose positions restart at each document).
  Variable at(const Tensor& positions) const;

 private:
  int64_t dim_;
  DType dtype_;
  double base_;
};

/// A trainable table of max_positions rows (GPT-2 / BERT style). Cannot extrapolate: asking
/// for a position past the table is an error naming both numbers.
/// Parameter: `weight` [max_positions, dim].
class LearnedPositionEmbedding : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override { return ParameterRole::kEmbedding; }
  LearnedPositionEmbedding(int64_t max_positions, int64_t dim, Generator& gen,
                           double init_std = 0.02, DType dtype = DType::kF32);
  /// Rows for positions offset .. offset+n−1: [n, dim].
  Variable forward(int64_t n, int64_t offset = 0) const;
  /// The rows of per-token positions (i64 [B, N], each in [0, max_positions)): [B, N, dim],
  /// with the table's gradient.
  Variable at(const Tensor& positions) const;
  int64_t max_positions() const { return max_positions_; }

 private:
  int64_t max_positions_;
  Variable weight_;
};

}  // namespace rota::nn
