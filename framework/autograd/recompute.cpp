// Activation recomputation: run a function without saving its internals, run it again in the
// backward.
#include "framework/autograd/recompute.h"

#include <memory>

#include "framework/autograd/function.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/precision.h"

namespace rota {

Variable recomputed(const char* name, const std::function<Variable(const Variable&)>& fn,
                    const Variable& input, const std::vector<Variable>& parameters,
                    std::shared_ptr<Generator> rng) {
  std::vector<Variable> inputs;
  inputs.reserve(parameters.size() + 1);
  inputs.push_back(input);
  inputs.insert(inputs.end(), parameters.begin(), parameters.end());
  const OpRecord record = inspect_inputs(inputs);
  if (!record.any) return fn(input);

  const Generator::State rng_before = rng ? rng->state() : Generator::State{};
  const MatmulPrecision precision = matmul_precision();
  Tensor output;
  {
    NoGradGuard no_grad;
    output = fn(Variable(input.data())).data();
  }
  const Tensor saved_input = input.data();
  const bool input_needs_grad = record.needs[0];
  const size_t slots = inputs.size();
  return record_op(name, output, inputs,
                   [fn, saved_input, input_needs_grad, slots, rng, rng_before,
                    precision](const Tensor& grad_output) -> std::vector<Tensor> {
                     std::vector<Tensor> grads(slots);
                     Generator::State rng_now{};
                     if (rng) {
                       rng_now = rng->state();
                       rng->set_state(rng_before);
                     }
                     Variable x(saved_input, input_needs_grad);
                     Variable y;
                     {
                       GradModeGuard with_grad(true);  // the engine may run a backward with it off
                       MatmulPrecisionGuard same_precision(precision);
                       y = fn(x);
                     }
                     if (rng) rng->set_state(rng_now);
                     // The parameters' gradients accumulate into them here; the outer graph gets
                     // the input's.
                     if (y.requires_grad()) run_backward({y}, {grad_output}, false);
                     if (input_needs_grad) grads[0] = x.grad();
                     return grads;
                   });
}

}  // namespace rota
