// Activation recomputation: run a function without saving its internals, run it again in the
// backward.
#include "framework/autograd/recompute.h"

#include <memory>

#include "framework/autograd/function.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/precision.h"

namespace rota {

std::vector<Variable> recomputed(
    const char* name, const std::function<std::vector<Variable>(const std::vector<Variable>&)>& fn,
    const std::vector<Variable>& inputs, const std::vector<Variable>& parameters,
    std::shared_ptr<Generator> rng) {
  // The node's inputs: the defined inputs, then the parameters.
  std::vector<Variable> recorded;
  std::vector<size_t> slot_of_input(inputs.size(), SIZE_MAX);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    slot_of_input[i] = recorded.size();
    recorded.push_back(inputs[i]);
  }
  recorded.insert(recorded.end(), parameters.begin(), parameters.end());
  const OpRecord record = inspect_inputs(recorded);
  if (!record.any) return fn(inputs);

  const Generator::State rng_before = rng ? rng->state() : Generator::State{};
  const MatmulPrecision precision = matmul_precision();
  std::vector<Tensor> saved(inputs.size());
  std::vector<bool> needs_grad(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (slot_of_input[i] == SIZE_MAX) continue;
    saved[i] = inputs[i].data();
    needs_grad[i] = record.needs[slot_of_input[i]];
  }
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    std::vector<Variable> detached(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (saved[i].defined()) detached[i] = Variable(saved[i]);
    }
    for (const Variable& y : fn(detached)) outputs.push_back(y.data());
  }
  const size_t slots = recorded.size();
  return record_multi_output_op(
      name, std::move(outputs), recorded,
      [fn, saved, needs_grad, slot_of_input, slots, rng, rng_before,
       precision](const std::vector<Tensor>& grad_outputs) -> std::vector<Tensor> {
        std::vector<Tensor> grads(slots);
        Generator::State rng_now{};
        if (rng) {
          rng_now = rng->state();
          rng->set_state(rng_before);
        }
        std::vector<Variable> xs(saved.size());
        for (size_t i = 0; i < saved.size(); ++i) {
          if (saved[i].defined()) xs[i] = Variable(saved[i], needs_grad[i]);
        }
        std::vector<Variable> ys;
        {
          GradModeGuard with_grad(true);  // the engine may run a backward with it off
          MatmulPrecisionGuard same_precision(precision);
          ys = fn(xs);
        }
        if (rng) rng->set_state(rng_now);
        // The parameters' gradients accumulate into them here; the outer graph gets the
        // inputs'.
        std::vector<Variable> roots;
        std::vector<Tensor> root_grads;
        for (size_t o = 0; o < ys.size(); ++o) {
          if (!ys[o].requires_grad()) continue;
          roots.push_back(ys[o]);
          root_grads.push_back(grad_outputs[o]);
        }
        if (!roots.empty()) run_backward(roots, root_grads, false);
        for (size_t i = 0; i < xs.size(); ++i) {
          if (needs_grad[i]) grads[slot_of_input[i]] = xs[i].grad();
        }
        return grads;
      });
}

Variable recomputed(const char* name, const std::function<Variable(const Variable&)>& fn,
                    const Variable& input, const std::vector<Variable>& parameters,
                    std::shared_ptr<Generator> rng) {
  return recomputed(
      name, [fn](const std::vector<Variable>& in) { return std::vector<Variable>{fn(in[0])}; },
      {input}, parameters, std::move(rng))[0];
}

}  // namespace rota
