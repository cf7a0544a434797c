// PermuteFormer (PER) baseline: position-dependent feature permutation before φ, plus decay.
#pragma once

#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// PermuteFormer as configured in the LRPE authors' code: one random permutation π shared by
/// all heads, applied as π^s to q_s and k_s *before* the feature map, and a per-head decay
/// γ_h = sigmoid(3h/H + 2) weighting the pair (s, t) by γ_h^(s−t) (ratio^s on q, ratio^(−t)
/// on k). The attention layer applies the decay: inside the causal kernel (stable), or
/// explicitly in the bidirectional form. Buffer: `permutation` [D] i64.
class PermuteFormer : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override {
    return ParameterRole::kPositional;
  }
  PermuteFormer(int64_t heads, int64_t head_dim, Generator& gen);
  /// x: [..., N, D] → x with row n's channels permuted by π^(offset+n).
  Variable permute(const Variable& x, int64_t offset = 0) const;
  /// γ_h for h = 0..H−1: [H] in the given dtype.
  Tensor decay(DType dtype) const;

 private:
  int64_t heads_;
  int64_t head_dim_;
  Tensor permutation_;
};

}  // namespace rota::nn
