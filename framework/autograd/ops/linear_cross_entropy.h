// Differentiable fused LM-head loss: cross_entropy(hidden·weightᵀ + bias) without the logits.
#pragma once

#include <cstdint>

#include "framework/autograd/ops/loss.h"
#include "framework/autograd/variable.h"

namespace rota {

/// cross_entropy(linear(hidden, weight, bias), targets, ignore_index, label_smoothing,
/// reduction), computed tile by tile (backend/linear_cross_entropy.h) so that the [R, V] logits
/// never exist. hidden: [..., E] (f32/f64), weight: [V, E], bias: [V] or an undefined Variable,
/// targets: [...] i32/i64 with hidden's leading shape; reduction kMean or kSum (kNone is an
/// error). Semantics as cross_entropy (kMean over an all-ignored batch: NaN, zero gradients).
///
/// The gradients of the inputs that need them are computed during the forward pass (the
/// logits are never recomputed) and saved; the backward only scales them by the incoming
/// scalar gradient. With no input needing a gradient (or grad mode off) only the loss is
/// computed. Under MatmulPrecision::kBF16 with f32 inputs, the products multiply bf16-rounded
/// operands (hidden and weight rounded once per call) and the gradient products take the
/// dlogits rounded to bf16, as matmul + cross_entropy would; the bias gradient sums the f32
/// dlogits. The dlogits are formed for an incoming gradient of 1 (as cross_entropy_backward
/// forms them), so for the usual loss.backward() fused and composed differ only in the exp
/// rounding and the products' accumulation order.
Variable linear_cross_entropy(const Variable& hidden, const Variable& weight, const Variable& bias,
                              const Tensor& targets, int64_t ignore_index = -100,
                              double label_smoothing = 0.0, Reduction reduction = Reduction::kMean);

}  // namespace rota
