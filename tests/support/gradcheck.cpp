// Central-difference gradient checking.
#include "tests/support/gradcheck.h"

#include <cmath>

#include <fmt/format.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/tensor/random.h"

namespace rota::testing {

namespace {

double projected(const Tensor& out, const Tensor& projection) {
  const Tensor p = backend::mul(out.to(projection.dtype()), projection);
  return backend::reduce_sum(p, {}, false).to(DType::kF64).item();
}

}  // namespace

::testing::AssertionResult gradcheck(const GradFunction& f, const std::vector<Tensor>& inputs,
                                     const GradcheckOptions& options) {
  std::vector<Variable> vars;
  std::vector<bool> check(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check[i] = is_floating(inputs[i].dtype()) &&
               (options.check.empty() || (i < options.check.size() && options.check[i]));
    vars.emplace_back(inputs[i], check[i]);
  }
  const Variable out = f(vars);
  Generator gen(options.seed);
  const Tensor projection = randn(out.shape(), gen, 0.0, 1.0, out.dtype());
  bool any = false;
  for (bool c : check) any = any || c;
  if (!any) return ::testing::AssertionFailure() << "gradcheck: no input to check";
  if (!out.requires_grad()) {
    return ::testing::AssertionFailure() << "gradcheck: output does not depend on any input";
  }
  out.backward(projection);

  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!check[i]) continue;
    Tensor x = inputs[i];  // shares storage with vars[i]: perturb in place
    const Tensor analytic = vars[i].grad().defined() ? vars[i].grad() : zeros_like(x);
    if (analytic.shape() != x.shape()) {
      return ::testing::AssertionFailure()
             << fmt::format("input {}: gradient shape {} for input shape {}", i,
                            shape_str(analytic.shape()), shape_str(x.shape()));
    }
    const std::vector<double> g = analytic.to_double_vector();
    NoGradGuard no_grad;
    int64_t flat = 0;
    std::vector<int64_t> index(x.dim(), 0);
    for (int64_t n = 0; n < x.numel(); ++n, ++flat) {
      const double orig = x.at(index);
      x.set(index, orig + options.eps);
      const double plus = projected(f(vars).data(), projection);
      x.set(index, orig - options.eps);
      const double minus = projected(f(vars).data(), projection);
      x.set(index, orig);
      const double numeric = (plus - minus) / (2 * options.eps);
      const double err = std::abs(numeric - g[flat]);
      if (!(err <= options.atol + options.rtol * std::abs(numeric))) {
        return ::testing::AssertionFailure() << fmt::format(
                   "input {} {} element {}: analytic {:.10g}, numeric {:.10g} (abs err {:.3g})", i,
                   shape_str(x.shape()), flat, g[flat], numeric, err);
      }
      for (int64_t d = x.dim() - 1; d >= 0; --d) {
        if (++index[d] < x.size(d)) break;
        index[d] = 0;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult gradcheck_variables(const std::function<Variable()>& f,
                                               const std::vector<Variable>& leaves,
                                               const GradcheckOptions& options) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].requires_grad() || !leaves[i].is_leaf()) {
      return ::testing::AssertionFailure()
             << "gradcheck_variables: variable " << i << " is not a leaf that requires grad";
    }
    Variable(leaves[i]).zero_grad();
  }
  const Variable out = f();
  Generator gen(options.seed);
  const Tensor projection = randn(out.shape(), gen, 0.0, 1.0, out.dtype());
  out.backward(projection);
  for (size_t i = 0; i < leaves.size(); ++i) {
    Tensor x = leaves[i].data();
    const Tensor analytic = leaves[i].grad().defined() ? leaves[i].grad() : zeros_like(x);
    const std::vector<double> g = analytic.to_double_vector();
    NoGradGuard no_grad;
    std::vector<int64_t> index(x.dim(), 0);
    for (int64_t flat = 0; flat < x.numel(); ++flat) {
      const double orig = x.at(index);
      x.set(index, orig + options.eps);
      const double plus = projected(f().data(), projection);
      x.set(index, orig - options.eps);
      const double minus = projected(f().data(), projection);
      x.set(index, orig);
      const double numeric = (plus - minus) / (2 * options.eps);
      const double err = std::abs(numeric - g[flat]);
      if (!(err <= options.atol + options.rtol * std::abs(numeric))) {
        return ::testing::AssertionFailure() << fmt::format(
                   "variable {} {} element {}: analytic {:.10g}, numeric {:.10g} (abs err {:.3g})",
                   i, shape_str(x.shape()), flat, g[flat], numeric, err);
      }
      for (int64_t d = x.dim() - 1; d >= 0; --d) {
        if (++index[d] < x.size(d)) break;
        index[d] = 0;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rota::testing
