// Layer norm and RMS norm ops: fused forward kernel, fused backward kernel in the closure.
#include "framework/autograd/ops/norm.h"

#include "framework/autograd/function.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/norm.h"

namespace rota {

namespace b = backend;

namespace {
Tensor data_or_none(const Variable& v) {
  return v.defined() ? v.data() : Tensor();
}
}  // namespace

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  b::LayerNormForward fwd =
      b::layer_norm_forward(x.data(), data_or_none(weight), data_or_none(bias), eps);
  const auto rec = inspect_inputs({x, weight, bias});
  if (!rec.any) return Variable(std::move(fwd.y), false);
  const b::NormGradRequest request{rec.needs[0], rec.needs[1], rec.needs[2]};
  // dbias = Σ g needs nothing saved; x, mean and rstd serve dx and dweight; weight only dx.
  const bool need_stats = request.x || request.weight;
  return record_op(
      "layer_norm", fwd.y, {x, weight, bias},
      [request, need_stats, xd = need_stats ? x.data() : Tensor(),
       mean = need_stats ? fwd.mean : Tensor(), rstd = need_stats ? fwd.rstd : Tensor(),
       wd = request.x ? data_or_none(weight) : Tensor()](const Tensor& g) {
        if (!need_stats) {
          // Only the bias needs a gradient: dbias = Σ_rows g.
          return std::vector<Tensor>{Tensor(), Tensor(), b::sum_to_shape(g, {g.size(-1)})};
        }
        b::LayerNormGrads grads = b::layer_norm_backward(g, xd, mean, rstd, wd, request);
        return std::vector<Tensor>{grads.dx, grads.dweight, grads.dbias};
      });
}

Variable rms_norm(const Variable& x, const Variable& weight, double eps) {
  b::RmsNormForward fwd = b::rms_norm_forward(x.data(), data_or_none(weight), eps);
  const auto rec = inspect_inputs({x, weight});
  if (!rec.any) return Variable(std::move(fwd.y), false);
  const b::NormGradRequest request{rec.needs[0], rec.needs[1], false};
  return record_op("rms_norm", fwd.y, {x, weight},
                   [request, xd = x.data(), rstd = fwd.rstd,
                    wd = request.x ? data_or_none(weight) : Tensor()](const Tensor& g) {
                     b::RmsNormGrads grads = b::rms_norm_backward(g, xd, rstd, wd, request);
                     return std::vector<Tensor>{grads.dx, grads.dweight};
                   });
}

}  // namespace rota
