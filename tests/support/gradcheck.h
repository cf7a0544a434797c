// Gradient check: autograd gradients against central finite differences.
#pragma once

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/variable.h"

namespace rota::testing {

struct GradcheckOptions {
  double eps = 1e-6;     // finite-difference step (suits f64; use ~1e-2 for f32)
  double atol = 1e-7;    // absolute tolerance on each gradient element
  double rtol = 1e-5;    // relative tolerance on each gradient element
  uint64_t seed = 1234;  // seed of the random projection of the outputs
  /// Which inputs to check (empty = every floating input). Integer inputs are never checked.
  std::vector<bool> check;
};

using GradFunction = std::function<Variable(const std::vector<Variable>& inputs)>;

/// Evaluates L = sum(f(inputs) * R) with a fixed random R (so every output element matters),
/// takes dL/d(input) by backward, and compares each element with
/// (L(x + eps) - L(x - eps)) / (2 eps). Inputs may be non-contiguous views.
::testing::AssertionResult gradcheck(const GradFunction& f, const std::vector<Tensor>& inputs,
                                     const GradcheckOptions& options = {});

}  // namespace rota::testing

namespace rota::testing {

/// Gradient check for existing leaf Variables (e.g. a module's parameters plus an input):
/// `f` computes the output from those Variables; each one must require grad. The Variables'
/// data are perturbed in place and restored; their .grad() is overwritten.
::testing::AssertionResult gradcheck_variables(const std::function<Variable()>& f,
                                               const std::vector<Variable>& leaves,
                                               const GradcheckOptions& options = {});

}  // namespace rota::testing
