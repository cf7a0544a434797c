// Fused layer-norm and RMS-norm kernels over the last dimension: forward and hand-written backward.
#pragma once

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Outputs of layer_norm_forward. x: [..., D] is seen as R = numel / D rows of D.
struct LayerNormForward {
  Tensor y;     // [..., D] like x
  Tensor mean;  // [R]  mean of each row
  Tensor rstd;  // [R]  1 / sqrt(var + eps), biased variance (divide by D)
};

/// y = (x - mean) * rstd * weight + bias over the last dim. weight and bias are [D] or undefined
/// (no scale / no shift). x is f32 or f64, any strides; outputs are contiguous.
LayerNormForward layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    double eps);

/// Gradients of layer norm; a member is undefined when it was not requested.
struct LayerNormGrads {
  Tensor dx;       // [..., D]
  Tensor dweight;  // [D]
  Tensor dbias;    // [D]
};

/// Which gradients a norm backward should compute.
struct NormGradRequest {
  bool x = true;
  bool weight = true;
  bool bias = true;
};

/// With x̂ = (x - mean) * rstd and gw = grad_y * weight (weight = 1 when undefined):
///   dx      = rstd * (gw - mean_D(gw) - x̂ * mean_D(gw * x̂))
///   dweight = Σ_rows grad_y * x̂,   dbias = Σ_rows grad_y.
/// dweight/dbias are summed in fixed row blocks, so the result does not depend on the thread
/// count. mean/rstd are the [R] tensors saved by the forward.
LayerNormGrads layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight,
                                   const NormGradRequest& request);

/// Outputs of rms_norm_forward.
struct RmsNormForward {
  Tensor y;     // [..., D] like x
  Tensor rstd;  // [R]  1 / sqrt(mean_D(x²) + eps)
};

/// y = x * rstd * weight over the last dim; weight is [D] or undefined (no scale).
RmsNormForward rms_norm_forward(const Tensor& x, const Tensor& weight, double eps);

/// Gradients of RMS norm; a member is undefined when it was not requested.
struct RmsNormGrads {
  Tensor dx;       // [..., D]
  Tensor dweight;  // [D]
};

/// With x̂ = x * rstd and gw = grad_y * weight:
///   dx = rstd * (gw - x̂ * mean_D(gw * x̂)),   dweight = Σ_rows grad_y * x̂.
/// request.bias is ignored.
RmsNormGrads rms_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& rstd,
                               const Tensor& weight, const NormGradRequest& request);

}  // namespace rota::backend
