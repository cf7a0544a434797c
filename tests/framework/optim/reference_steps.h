// Optimizer tests: stepping an optimizer and a plain double reference side by side.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "framework/optim/optimizer.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"

namespace rota::optim::testing {

/// Runs `steps` steps of `opt` (which updates `param`) and of `reference` (a struct with
/// step(std::vector<double>& p, const std::vector<double>& grad)) on the same N(0, 1) gradients
/// drawn from `gen` in the parameter's dtype. `expected` starts as the parameter's initial
/// values; after each step the parameter must match it within rtol/atol (a fatal failure names
/// the step).
template <typename Reference>
void expect_steps_match_reference(Optimizer& opt, Variable& param, Reference& reference,
                                  std::vector<double> expected, Generator& gen, int steps,
                                  double rtol, double atol) {
  const Shape shape = param.data().shape();
  const DType dtype = param.data().dtype();
  for (int step = 1; step <= steps; ++step) {
    const Tensor grad = randn(shape, gen, 0.0, 1.0, dtype);
    param.set_grad(grad);
    opt.step();
    reference.step(expected, grad.to_double_vector());
    ASSERT_TRUE(rota::testing::allclose(
        param.data(), tensor_from(expected, shape, DType::kF64).to(dtype), rtol, atol))
        << "after step " << step;
  }
}

}  // namespace rota::optim::testing
