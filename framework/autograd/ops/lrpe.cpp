// Records the fused LRPE kernel pair on the tape.
#include "framework/autograd/ops/lrpe.h"

#include "framework/autograd/function.h"

namespace rota {

Variable lrpe(const backend::LrpeKernelConfig& config, const Variable& x, const Variable& theta,
              const Variable& w, const Tensor& permutation) {
  const Tensor theta_t = theta.defined() ? theta.data() : Tensor();
  const Tensor w_t = w.defined() ? w.data() : Tensor();
  Tensor y = backend::lrpe_forward(config, x.data(), theta_t, w_t, permutation);
  const auto rec = inspect_inputs({x, theta, w});
  if (!rec.any) return Variable(std::move(y), false);
  return record_op(
      "lrpe", y, {x, theta, w},
      [config, xd = x.data(), theta_t, w_t, permutation, needs = rec.needs](const Tensor& g) {
        auto grads = backend::lrpe_backward(config, xd, theta_t, w_t, permutation, g);
        return std::vector<Tensor>{needs[0] ? grads.dx : Tensor(),
                                   needs[1] ? grads.dtheta : Tensor(),
                                   needs[2] ? grads.dw : Tensor()};
      });
}

}  // namespace rota
