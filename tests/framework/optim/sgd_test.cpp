// SGD against a plain double reference: momentum, dampening, Nesterov, decay, groups, state.
#include "framework/optim/sgd.h"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"
#include "tests/framework/optim/reference_steps.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota::optim {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;
using rota::testing::expect_error;

/// torch.optim.SGD written out in doubles, one parameter at a time.
struct ReferenceSgd {
  double lr, weight_decay, momentum, dampening;
  bool nesterov;
  std::vector<double> buffer;  // empty until the first update

  void step(std::vector<double>& p, const std::vector<double>& grad) {
    const bool first = buffer.empty();
    if (momentum != 0 && first) buffer.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double d = grad[i] + weight_decay * p[i];
      if (momentum != 0) {
        buffer[i] = first ? d : momentum * buffer[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buffer[i] : buffer[i];
      }
      p[i] -= lr * d;
    }
  }
};

struct SgdCase {
  std::string name;
  SgdOptions options;
  friend void PrintTo(const SgdCase& c, std::ostream* os) { *os << c.name; }
};

std::vector<SgdCase> sgd_cases() {
  auto make = [](double wd, double momentum, double dampening, bool nesterov) {
    SgdOptions o;
    o.lr = 0.1;
    o.weight_decay = wd;
    o.momentum = momentum;
    o.dampening = dampening;
    o.nesterov = nesterov;
    return o;
  };
  return {
      {"plain", make(0, 0, 0, false)},
      {"weight_decay", make(0.05, 0, 0, false)},
      {"momentum", make(0, 0.9, 0, false)},
      {"momentum_dampening", make(0, 0.9, 0.3, false)},
      {"nesterov", make(0, 0.8, 0, true)},
      {"nesterov_weight_decay", make(0.01, 0.9, 0, true)},
      {"momentum_dampening_decay", make(0.02, 0.7, 0.5, false)},
  };
}

class SgdMatchesReference : public ::testing::TestWithParam<SgdCase> {};

void run_against_reference(const SgdOptions& options, const Shape& shape, DType dtype, double rtol,
                           double atol) {
  Generator gen(42);
  const Tensor init = randn(shape, gen, 0.0, 1.0, DType::kF64);
  Variable param(init.to(dtype), true);
  SGD opt({param}, options);
  ReferenceSgd ref{options.lr,        options.weight_decay, options.momentum,
                   options.dampening, options.nesterov,     {}};
  ASSERT_NO_FATAL_FAILURE(testing::expect_steps_match_reference(
      opt, param, ref, init.to(dtype).to_double_vector(), gen, 4, rtol, atol));
  EXPECT_EQ(opt.step_count(), 4);
}

TEST_P(SgdMatchesReference, F64Small) {
  run_against_reference(GetParam().options, {5, 7}, DType::kF64, 1e-14, 1e-14);
}

TEST_P(SgdMatchesReference, F32LargeParallel) {
  // 128 * 96 elements is above the parallel grain, so several threads share the update.
  run_against_reference(GetParam().options, {128, 96}, DType::kF32, 1e-5, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Sgd, SgdMatchesReference, ::testing::ValuesIn(sgd_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Sgd, FirstMomentumStepIsPlainGradientStep) {
  // With momentum and dampening, the first update uses b = g (no dampening): p -= lr * g.
  Variable p(tensor_from({1.0, -2.0}, {2}, DType::kF64), true);
  SgdOptions o;
  o.lr = 0.5;
  o.momentum = 0.9;
  o.dampening = 0.5;
  SGD opt({p}, o);
  p.set_grad(tensor_from({0.2, 0.4}, {2}, DType::kF64));
  opt.step();
  EXPECT_TRUE(allclose(p.data(), tensor_from({1.0 - 0.1, -2.0 - 0.2}, {2}, DType::kF64), 1e-15));
  // Second step: b = 0.9 * g1 + 0.5 * g2.
  p.set_grad(tensor_from({1.0, 0.0}, {2}, DType::kF64));
  opt.step();
  const double b0 = 0.9 * 0.2 + 0.5 * 1.0, b1 = 0.9 * 0.4;
  EXPECT_TRUE(
      allclose(p.data(), tensor_from({0.9 - 0.5 * b0, -2.2 - 0.5 * b1}, {2}, DType::kF64), 1e-15));
}

TEST(Sgd, GroupsWithOwnLrAndDecaySkipParamsWithoutGrad) {
  Generator gen(7);
  const Tensor a0 = randn({3, 4}, gen, 0, 1, DType::kF64);
  const Tensor b0 = randn({4}, gen, 0, 1, DType::kF64);
  const Tensor c0 = randn({2, 2}, gen, 0, 1, DType::kF64);
  Variable a(a0.clone(), true), b(b0.clone(), true), c(c0.clone(), true);
  ParamGroup decay;
  decay.name = "decay";
  decay.params = {a, c};
  decay.param_names = {"a", "c"};
  decay.lr = 0.1;
  decay.weight_decay = 0.01;
  ParamGroup no_decay;
  no_decay.name = "no_decay";
  no_decay.params = {b};
  no_decay.lr = 0.05;
  no_decay.lr_multiplier = 0.5;
  SgdOptions o;
  o.momentum = 0.9;
  SGD opt({decay, no_decay}, o);

  ReferenceSgd ref_a{0.1, 0.01, 0.9, 0, false, {}};
  ReferenceSgd ref_b{0.05, 0.0, 0.9, 0, false, {}};
  ReferenceSgd ref_c{0.1, 0.01, 0.9, 0, false, {}};
  std::vector<double> ea = a0.to_double_vector(), eb = b0.to_double_vector(),
                      ec = c0.to_double_vector();
  for (int step = 1; step <= 3; ++step) {
    if (step == 2) {
      // The schedule sets the base lr; each group gets base * lr_multiplier.
      opt.set_lr(0.2);
      EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr, 0.2);
      EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr, 0.1);
      EXPECT_DOUBLE_EQ(opt.lr(), 0.2);
      ref_a.lr = ref_c.lr = 0.2;
      ref_b.lr = 0.1;
    }
    const Tensor ga = randn({3, 4}, gen, 0, 1, DType::kF64);
    const Tensor gb = randn({4}, gen, 0, 1, DType::kF64);
    const Tensor gc = randn({2, 2}, gen, 0, 1, DType::kF64);
    a.set_grad(ga);
    b.set_grad(gb);
    if (step == 3) c.set_grad(gc);  // c has no gradient in steps 1 and 2
    opt.step();
    ref_a.step(ea, ga.to_double_vector());
    ref_b.step(eb, gb.to_double_vector());
    if (step == 3) ref_c.step(ec, gc.to_double_vector());  // fresh momentum at its 1st update
    EXPECT_TRUE(allclose(a.data(), tensor_from(ea, {3, 4}, DType::kF64), 1e-14, 1e-14));
    EXPECT_TRUE(allclose(b.data(), tensor_from(eb, {4}, DType::kF64), 1e-14, 1e-14));
    EXPECT_TRUE(allclose(c.data(), tensor_from(ec, {2, 2}, DType::kF64), 1e-14, 1e-14));
    if (step == 2) {
      // c has no state yet; b got the default name "<group>.<i>".
      std::vector<std::string> names;
      for (const auto& entry : opt.state_tensors()) names.push_back(entry.first);
      EXPECT_EQ(names, (std::vector<std::string>{"step", "a.step", "a.momentum_buffer",
                                                 "no_decay.0.step", "no_decay.0.momentum_buffer"}));
    }
  }
  EXPECT_FALSE(allclose(c.data(), c0, 0, 0));  // it did move at step 3
}

TEST(Sgd, FrozenParametersAreSkipped) {
  Variable frozen(ones({3}, DType::kF64), false);
  Variable live(ones({3}, DType::kF64), true);
  SgdOptions o;
  o.lr = 1.0;
  SGD opt({frozen, live}, o);
  frozen.set_grad(ones({3}, DType::kF64));  // a stray grad on a frozen tensor is ignored
  live.set_grad(ones({3}, DType::kF64));
  opt.step();
  EXPECT_TRUE(allclose(frozen.data(), ones({3}, DType::kF64), 0, 0));
  EXPECT_TRUE(allclose(live.data(), zeros({3}, DType::kF64), 0, 0));
}

TEST(Sgd, StateRoundTripContinuesIdentically) {
  Generator gen(9);
  const Tensor w0 = randn({6, 5}, gen, 0, 1, DType::kF32);
  SgdOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  o.nesterov = true;
  Variable w(w0.clone(), true);
  ParamGroup g;
  g.params = {w};
  g.param_names = {"w"};
  g.lr = o.lr;
  SGD first({g}, o);
  for (int i = 0; i < 2; ++i) {
    w.set_grad(randn({6, 5}, gen));
    first.step();
  }
  std::vector<std::pair<std::string, Tensor>> saved;
  for (const auto& [name, t] : first.state_tensors()) saved.emplace_back(name, t.clone());
  ASSERT_EQ(saved.size(), 3u);
  EXPECT_EQ(saved[0].first, "step");
  EXPECT_EQ(saved[0].second.item(), 2);
  EXPECT_EQ(saved[2].first, "w.momentum_buffer");

  Variable w2(w.data().clone(), true);
  g.params = {w2};
  SGD second({g}, o);
  second.load_state(saved);
  EXPECT_EQ(second.step_count(), 2);
  const Tensor grad = randn({6, 5}, gen);
  w.set_grad(grad);
  w2.set_grad(grad.clone());
  first.step();
  second.step();
  EXPECT_TRUE(allclose(w2.data(), w.data(), 0, 0));
}

TEST(Sgd, LoadStateErrorsNameTheEntry) {
  Variable w(zeros({2, 3}), true);
  ParamGroup g;
  g.params = {w};
  g.param_names = {"layer.w"};
  SgdOptions o;
  o.momentum = 0.9;
  SGD opt({g}, o);
  const Tensor step = scalar_tensor(1, DType::kI64);
  expect_error(
      [&] {
        opt.load_state({{"step", step}, {"layer.v.momentum_buffer", zeros({2, 3})}});
      },
      {"'layer.v.momentum_buffer'", "no parameter"});
  expect_error(
      [&] {
        opt.load_state({{"step", step}, {"layer.w.exp_avg", zeros({2, 3})}});
      },
      {"'layer.w.exp_avg'", "suffix"});
  expect_error(
      [&] {
        opt.load_state({{"step", step}, {"layer.w.momentum_buffer", zeros({3, 2})}});
      },
      {"'layer.w.momentum_buffer'", "[3,2]", "[2,3]"});
  expect_error([&] { opt.load_state({{"layer.w.momentum_buffer", zeros({2, 3})}}); }, {"'step'"});
  EXPECT_EQ(opt.step_count(), 0);  // failed loads changed nothing
}

TEST(Sgd, RejectsBadConfiguration) {
  Variable w(zeros({2}), true);
  SgdOptions nesterov_without_momentum;
  nesterov_without_momentum.nesterov = true;
  EXPECT_THROW(SGD({w}, nesterov_without_momentum), Error);
  SgdOptions negative_lr;
  negative_lr.lr = -1;
  EXPECT_THROW(SGD({w}, negative_lr), Error);
  EXPECT_THROW(SGD({w, w}, SgdOptions{}), Error);  // the same parameter twice
  EXPECT_THROW(SGD(std::vector<Variable>{Variable(zeros({2}, DType::kBF16))}, SgdOptions{}), Error);
  SGD opt({w}, SgdOptions{});
  // set_grad refuses a mismatched gradient; write one behind its back to reach step's check.
  w.impl()->grad = zeros({3});
  expect_error([&] { opt.step(); }, {"[3]", "[2]"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::optim
