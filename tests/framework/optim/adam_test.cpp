// Adam and AdamW against plain double references and closed forms (bias correction, decay).
#include "framework/optim/adam.h"

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"
#include "tests/framework/optim/reference_steps.h"
#include "tests/support/allclose.h"

namespace rota::optim {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

/// Adam / AdamW as in the papers (Kingma & Ba; Loshchilov & Hutter), in doubles, written with
/// the bias-corrected moments m_hat, v_hat rather than PyTorch's rearranged step size.
struct ReferenceAdam {
  double lr, weight_decay, beta1, beta2, eps;
  bool decoupled;
  std::vector<double> m, v;
  int t = 0;

  void step(std::vector<double>& p, const std::vector<double>& grad) {
    if (m.empty()) {
      m.assign(p.size(), 0.0);
      v.assign(p.size(), 0.0);
    }
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = decoupled ? grad[i] : grad[i] + weight_decay * p[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      const double v_hat = v[i] / (1 - std::pow(beta2, t));
      const double decay = decoupled ? lr * weight_decay * p[i] : 0.0;
      p[i] = p[i] - decay - lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

struct AdamCase {
  std::string name;
  AdamOptions options;
  friend void PrintTo(const AdamCase& c, std::ostream* os) { *os << c.name; }
};

std::vector<AdamCase> adam_cases() {
  auto make = [](double lr, double wd, double b1, double b2, double eps, bool decoupled) {
    return AdamOptions{.lr = lr,
                       .weight_decay = wd,
                       .beta1 = b1,
                       .beta2 = b2,
                       .eps = eps,
                       .decoupled_weight_decay = decoupled};
  };
  return {
      {"adam_defaults", make(1e-3, 0, 0.9, 0.999, 1e-8, false)},
      {"adam_l2", make(1e-2, 0.1, 0.9, 0.999, 1e-8, false)},
      {"adamw", make(1e-2, 0.1, 0.9, 0.999, 1e-8, true)},
      {"adamw_betas_eps", make(3e-2, 0.05, 0.8, 0.99, 1e-3, true)},
      {"adam_beta1_zero", make(1e-2, 0.0, 0.0, 0.95, 1e-8, false)},
  };
}

class AdamMatchesReference : public ::testing::TestWithParam<AdamCase> {};

void run_against_reference(const AdamOptions& o, const Shape& shape, DType dtype, double rtol,
                           double atol) {
  Generator gen(11);
  const Tensor init = randn(shape, gen, 0.0, 1.0, DType::kF64).to(dtype);
  Variable param(init.clone(), true);
  Adam opt({param}, o);
  ReferenceAdam ref{o.lr,  o.weight_decay,           o.beta1, o.beta2,
                    o.eps, o.decoupled_weight_decay, {},      {}};
  testing::expect_steps_match_reference(opt, param, ref, init.to_double_vector(), gen, 5, rtol,
                                        atol);
}

TEST_P(AdamMatchesReference, F64Small) {
  run_against_reference(GetParam().options, {4, 6}, DType::kF64, 1e-13, 1e-14);
}

TEST_P(AdamMatchesReference, F32LargeParallel) {
  // 96 * 64 elements at cost 8 is above the parallel grain. f32 rounding of p (|p| ~ 1) and of
  // the ~lr-sized update allows a few 1e-7 of absolute error after 5 steps.
  run_against_reference(GetParam().options, {96, 64}, DType::kF32, 1e-6, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Adam, AdamMatchesReference, ::testing::ValuesIn(adam_cases()),
                         [](const auto& info) { return info.param.name; });

AdamOptions options(double lr, double wd, bool decoupled) {
  return {.lr = lr, .weight_decay = wd, .decoupled_weight_decay = decoupled};
}

TEST(Adam, BiasCorrectionAtStepOneAndThree) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const std::vector<double> p0 = {0.5, -1.0, 2.0};
  const std::vector<std::vector<double>> grads = {
      {0.3, -2.0, 1e-3}, {-0.1, 0.5, 2.0}, {0.7, 0.2, -0.4}};
  Variable p(tensor_from(p0, {3}, DType::kF64), true);
  Adam opt({p}, options(lr, 0.0, false));

  // Step 1: m_hat = g and v_hat = g^2 exactly, so the step is lr * g / (|g| + eps) (~ lr*sign).
  p.set_grad(tensor_from(grads[0], {3}, DType::kF64));
  opt.step();
  std::vector<double> p1(3);
  for (int i = 0; i < 3; ++i) p1[i] = p0[i] - lr * grads[0][i] / (std::abs(grads[0][i]) + eps);
  EXPECT_TRUE(allclose(p.data(), tensor_from(p1, {3}, DType::kF64), 1e-15, 1e-16));

  p.set_grad(tensor_from(grads[1], {3}, DType::kF64));
  opt.step();
  const std::vector<double> p2 = p.data().to_double_vector();
  p.set_grad(tensor_from(grads[2], {3}, DType::kF64));
  opt.step();
  // Step 3 in closed form: m_3 = (1-b1)(b1^2 g1 + b1 g2 + g3), v_3 likewise with squares,
  // corrected by 1 - b^3.
  std::vector<double> p3(3);
  for (int i = 0; i < 3; ++i) {
    const double g1 = grads[0][i], g2 = grads[1][i], g3 = grads[2][i];
    const double m3 = (1 - b1) * (b1 * b1 * g1 + b1 * g2 + g3);
    const double v3 = (1 - b2) * (b2 * b2 * g1 * g1 + b2 * g2 * g2 + g3 * g3);
    const double m_hat = m3 / (1 - b1 * b1 * b1), v_hat = v3 / (1 - b2 * b2 * b2);
    p3[i] = p2[i] - lr * m_hat / (std::sqrt(v_hat) + eps);
  }
  EXPECT_TRUE(allclose(p.data(), tensor_from(p3, {3}, DType::kF64), 1e-14, 1e-16));
}

TEST(Adam, ConstantGradientMovesLrPerStepThanksToBiasCorrection) {
  // m_t = (1 - b1^t) g and v_t = (1 - b2^t) g^2, so every corrected step is lr g / (|g| + eps).
  // Without bias correction the first steps would be ~10x (m) / ~30x (v) off.
  const double lr = 0.01, eps = 1e-8;
  const std::vector<double> p0 = {1.0, -1.0, 0.25, 3.0}, g = {0.5, -0.01, 4.0, -1.0};
  Variable p(tensor_from(p0, {4}, DType::kF64), true);
  Adam opt({p}, options(lr, 0.0, false));
  for (int t = 1; t <= 3; ++t) {
    p.set_grad(tensor_from(g, {4}, DType::kF64));
    opt.step();
    std::vector<double> expected(4);
    for (int i = 0; i < 4; ++i) expected[i] = p0[i] - t * lr * g[i] / (std::abs(g[i]) + eps);
    EXPECT_TRUE(allclose(p.data(), tensor_from(expected, {4}, DType::kF64), 1e-14, 1e-16))
        << "step " << t;
  }
}

TEST(Adam, AdamWDecaysDecoupledWhileAdamFoldsDecayIntoTheGradient) {
  const double lr = 0.1, wd = 0.5, eps = 1e-8;
  const std::vector<double> p0 = {2.0, -0.5, 1e-3};
  const Tensor zero_grad = zeros({3}, DType::kF64);
  // AdamW with a zero gradient: the moments stay 0, only the decay acts: p *= 1 - lr * wd.
  Variable pw(tensor_from(p0, {3}, DType::kF64), true);
  AdamW adamw({pw}, options(lr, wd, false));  // AdamW forces decoupling
  EXPECT_STREQ(adamw.name(), "AdamW");
  pw.set_grad(zero_grad);
  adamw.step();
  std::vector<double> expected_w(3);
  for (int i = 0; i < 3; ++i) expected_w[i] = p0[i] * (1 - lr * wd);
  EXPECT_TRUE(allclose(pw.data(), tensor_from(expected_w, {3}, DType::kF64), 1e-15, 0));
  // Adam: the decay is a gradient wd * p, normalised like any other: a step of ~lr * sign(p).
  Variable pa(tensor_from(p0, {3}, DType::kF64), true);
  Adam adam({pa}, options(lr, wd, false));
  EXPECT_STREQ(adam.name(), "Adam");
  pa.set_grad(zero_grad);
  adam.step();
  std::vector<double> expected_a(3);
  for (int i = 0; i < 3; ++i) {
    expected_a[i] = p0[i] - lr * (wd * p0[i]) / (std::abs(wd * p0[i]) + eps);
  }
  EXPECT_TRUE(allclose(pa.data(), tensor_from(expected_a, {3}, DType::kF64), 1e-15, 0));

  // Without decay the two are the same algorithm, bit for bit.
  Generator gen(3);
  const Tensor init = randn({5, 5}, gen);
  Variable x(init.clone(), true), y(init.clone(), true);
  Adam plain({x}, options(0.01, 0.0, false));
  AdamW decoupled({y}, options(0.01, 0.0, true));
  for (int t = 0; t < 3; ++t) {
    const Tensor g = randn({5, 5}, gen);
    x.set_grad(g);
    y.set_grad(g.clone());
    plain.step();
    decoupled.step();
  }
  EXPECT_TRUE(allclose(x.data(), y.data(), 0, 0));
}

TEST(Adam, GroupsAndPerParameterStepCounts) {
  Generator gen(5);
  const Tensor a0 = randn({3, 3}, gen, 0, 1, DType::kF64);
  const Tensor b0 = randn({3}, gen, 0, 1, DType::kF64);
  const Tensor c0 = randn({2}, gen, 0, 1, DType::kF64);
  Variable a(a0.clone(), true), b(b0.clone(), true), c(c0.clone(), true);
  ParamGroup decay;
  decay.name = "decay";
  decay.params = {a, c};
  decay.param_names = {"a", "c"};
  decay.lr = 0.02;
  decay.weight_decay = 0.1;
  ParamGroup no_decay;
  no_decay.name = "no_decay";
  no_decay.params = {b};
  no_decay.param_names = {"b"};
  no_decay.lr = 0.01;
  AdamW opt({decay, no_decay}, AdamOptions{});

  ReferenceAdam ref_a{0.02, 0.1, 0.9, 0.999, 1e-8, true, {}, {}};
  ReferenceAdam ref_b{0.01, 0.0, 0.9, 0.999, 1e-8, true, {}, {}};
  std::vector<double> ea = a0.to_double_vector(), eb = b0.to_double_vector();
  std::vector<double> ec = c0.to_double_vector();
  for (int step = 1; step <= 3; ++step) {
    const Tensor ga = randn({3, 3}, gen, 0, 1, DType::kF64);
    const Tensor gb = randn({3}, gen, 0, 1, DType::kF64);
    a.set_grad(ga);
    b.set_grad(gb);
    if (step == 3) c.set_grad(tensor_from({0.3, -0.2}, {2}, DType::kF64));
    opt.step();
    ref_a.step(ea, ga.to_double_vector());
    ref_b.step(eb, gb.to_double_vector());
    EXPECT_TRUE(allclose(a.data(), tensor_from(ea, {3, 3}, DType::kF64), 1e-13, 1e-15));
    EXPECT_TRUE(allclose(b.data(), tensor_from(eb, {3}, DType::kF64), 1e-13, 1e-15));
    if (step < 3) {
      EXPECT_TRUE(allclose(c.data(), c0, 0, 0));  // no grad: untouched, not even decayed
    }
  }
  // c's first update happens at optimizer step 3 but is its own step 1 (PyTorch keeps a step
  // per parameter): full bias correction, so it moves by lr * g / (|g| + eps) after decay.
  std::vector<double> expected_c(2);
  const std::vector<double> gc = {0.3, -0.2};
  for (int i = 0; i < 2; ++i) {
    expected_c[i] = ec[i] * (1 - 0.02 * 0.1) - 0.02 * gc[i] / (std::abs(gc[i]) + 1e-8);
  }
  EXPECT_TRUE(allclose(c.data(), tensor_from(expected_c, {2}, DType::kF64), 1e-14, 1e-16));

  std::vector<std::string> names;
  for (const auto& entry : opt.state_tensors()) names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "a.step", "a.exp_avg", "a.exp_avg_sq",
                                             "c.step", "c.exp_avg", "c.exp_avg_sq", "b.step",
                                             "b.exp_avg", "b.exp_avg_sq"}));
  for (const auto& [name, tensor] : opt.state_tensors()) {
    if (name == "step" || name == "a.step" || name == "b.step") {
      EXPECT_EQ(tensor.item(), 3);
    }
    if (name == "c.step") {
      EXPECT_EQ(tensor.item(), 1);
    }
  }
}

TEST(Adam, StateRoundTripContinuesIdentically) {
  Generator gen(13);
  const Tensor w0 = randn({8, 4}, gen);
  ParamGroup g;
  g.params = {Variable(w0.clone(), true)};
  g.param_names = {"w"};
  g.lr = 3e-3;
  g.weight_decay = 0.01;
  Variable w = g.params[0];
  AdamW first({g}, AdamOptions{});
  for (int i = 0; i < 3; ++i) {
    w.set_grad(randn({8, 4}, gen));
    first.step();
  }
  std::vector<std::pair<std::string, Tensor>> saved;
  for (const auto& [name, t] : first.state_tensors()) saved.emplace_back(name, t.clone());

  Variable w2(w.data().clone(), true);
  g.params = {w2};
  AdamW second({g}, AdamOptions{});
  second.load_state(saved);
  for (int i = 0; i < 2; ++i) {
    const Tensor grad = randn({8, 4}, gen);
    w.set_grad(grad);
    w2.set_grad(grad.clone());
    first.step();
    second.step();
  }
  EXPECT_TRUE(allclose(w2.data(), w.data(), 0, 0));
  EXPECT_EQ(second.step_count(), 5);

  // Loading without "w.*" entries resets w's moments and its bias-correction clock.
  AdamW third({g}, AdamOptions{});
  third.load_state({{"step", scalar_tensor(7, DType::kI64)}});
  EXPECT_EQ(third.step_count(), 7);
  EXPECT_EQ(third.state_tensors().size(), 1u);
}

TEST(Adam, RejectsBadOptions) {
  Variable w(zeros({2}), true);
  AdamOptions o;
  o.beta1 = 1.0;
  EXPECT_THROW(Adam({w}, o), Error);
  o = AdamOptions{};
  o.beta2 = -0.1;
  EXPECT_THROW(Adam({w}, o), Error);
  o = AdamOptions{};
  o.eps = -1e-8;
  EXPECT_THROW(AdamW({w}, o), Error);
  o = AdamOptions{};
  o.weight_decay = -0.1;
  EXPECT_THROW(AdamW({w}, o), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::optim
