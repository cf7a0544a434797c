// Fused output projection + cross-entropy (LM heads): row tiles, logits never materialised.
#pragma once

#include <cstdint>

#include "framework/backend/primitives/cross_entropy.h"
#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Rows per tile when LinearCrossEntropyOptions::tile_rows is 0 (measured in
/// bench/linear_cross_entropy_bench.cpp: see docs/performance.md).
constexpr int64_t kLinearCrossEntropyTileRows = 256;
/// Rows of rounded dlogits gathered (a few tiles) before each weight-gradient product when
/// LinearCrossEntropyOptions::weight_gradient_rows is 0: the product accumulates into the
/// whole [V, E] f32 gradient, so fewer, deeper products move less memory.
constexpr int64_t kLinearCrossEntropyWeightGradientRows = 1024;

struct LinearCrossEntropyOptions {
  int64_t ignore_index = -100;   // rows whose target equals this contribute no loss or gradient
  double label_smoothing = 0.0;  // ε in [0, 1]: target distribution (1-ε)·onehot + ε/V
  Reduction reduction = Reduction::kMean;  // kMean or kSum (kNone would need the per-row grads)
  // Which gradients to compute during the pass (none: loss only).
  bool grad_hidden = false;
  bool grad_weight = false;
  bool grad_bias = false;  // ignored without a bias
  /// Round each dlogits tile to bf16 before the two gradient products, as the matmul op's
  /// backward does under MatmulPrecision::kBF16. Implied when hidden and weight are bf16 (the
  /// rounded tile is then a bf16 tensor); with f32 operands (the portable bf16 path: f32 tensors
  /// holding bf16-rounded values) the rounded values stay f32.
  bool round_dlogits_to_bf16 = false;
  int64_t tile_rows = 0;  // rows per tile; 0 = kLinearCrossEntropyTileRows
  /// With rounded dlogits (bf16), rows per weight-gradient product, rounded up to whole tiles;
  /// 0 = kLinearCrossEntropyWeightGradientRows. Unrounded dlogits: one product per tile.
  int64_t weight_gradient_rows = 0;
};

struct LinearCrossEntropyResult {
  Tensor loss;  // [] f64 for f64 operands, f32 otherwise
  // Gradients of `loss` itself (an incoming gradient of 1); undefined unless requested.
  Tensor grad_hidden;      // hidden's shape
  Tensor grad_weight;      // [V, E]
  Tensor grad_bias;        // [V]
  int64_t valid_rows = 0;  // rows whose target is not ignore_index
};

/// loss = cross_entropy(hidden·weightᵀ + bias, targets) with the semantics of
/// cross_entropy_forward (kMean: NaN when every row is ignored, with zero gradients).
/// hidden: [..., E] seen as R rows, weight: [V, E] (PyTorch layout), bias: [V] or undefined,
/// targets: [...] i32/i64 with hidden's leading shape. hidden and weight are both f32, both f64
/// or both bf16 (f32 results); bias has the result dtype.
///
/// Rows whose target is ignore_index are skipped (when some are, the others are gathered into a
/// compact [Rv, E] copy first). The remaining rows are processed in tiles of T rows:
///   z = hidden_tile·weightᵀ + bias                           [T, V] (oneDNN, f32 accumulation)
///   lse_r = log Σ_v exp(z_rv),  loss_r = (1-ε)·(lse_r - z_rt) + ε·(lse_r - mean_v z_rv)
/// and, when gradients are requested, in the same pass (s = 1/Rv for kMean, 1 for kSum):
///   dz_rv = (softmax(z_r)_v - ε/V - (1-ε)·[v == t_r])·s     [T, V] (in place of z)
///   grad_hidden_tile = dz·weight,  grad_weight += dzᵀ·hidden_tile,  grad_bias += Σ_r dz_r
/// so the logits are never recomputed and no [R, V] tensor exists: peak extra memory is one
/// [T, V] tile, the bf16 rounding of up to weight_gradient_rows rows of dz (the weight
/// gradient is formed over that many rows at once) and the gradients. The softmax rows run on
/// parallel_for; the products are threaded by oneDNN. Errors name the op and the shapes.
LinearCrossEntropyResult linear_cross_entropy(const Tensor& hidden, const Tensor& weight,
                                              const Tensor& bias, const Tensor& targets,
                                              const LinearCrossEntropyOptions& options);

}  // namespace rota::backend
