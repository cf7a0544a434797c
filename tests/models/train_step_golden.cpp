// Full training steps of the tiny CausalLm and MaskedLm against the PyTorch reference
// (tests/reference/train_step_reference.py): loss, every gradient, and the parameters after three
// clipped AdamW steps over decay_param_groups, in f64; also a causal LM with the LLaMA-style
// block (RMSNorm, SwiGLU, no biases), and both blocks fine-tuned with low-rank adapters.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/lora.h"
#include "framework/optim/adam.h"
#include "framework/optim/schedule.h"
#include "framework/train/train_step.h"
#include "models/language_models.h"
#include "tests/support/allclose.h"
#include "tests/support/golden.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::GoldenCase;

// Tolerances. Every model part runs in f64 (ModelOptions::dtype = kF64), as does the reference,
// so the two differ only by the order of floating-point operations: ~1e-16 relative per
// operation, amplified by at most a few orders of magnitude through two layers, the loss and
// three Adam steps (Adam's m / sqrt(v) is scale-free, and eps = 1e-8 bounds how much a
// near-zero gradient's rounding can move a parameter: lr * 1e-16 / 1e-8 = 1e-10 at worst).
// 1e-9 relative is far below any real modelling difference (a flipped Householder sign or a
// wrong decay group changes values at 1e-3 or more). atol covers entries that are near zero by
// cancellation (gradients are O(1e-3..1)).
constexpr double kRtol = 1e-9;
constexpr double kAtol = 1e-12;

/// Largest absolute and relative (to max(|expected|, 1e-6)) differences over many tensors, for
/// the report.
struct MaxError {
  double abs = 0.0;
  double rel = 0.0;
  void add(const Tensor& actual, const Tensor& expected) {
    const std::vector<double> a = actual.to_double_vector();
    const std::vector<double> e = expected.to_double_vector();
    for (size_t i = 0; i < std::min(a.size(), e.size()); ++i) {
      const double diff = std::abs(a[i] - e[i]);
      abs = std::max(abs, diff);
      rel = std::max(rel, diff / std::max(std::abs(e[i]), 1e-6));
    }
  }
  void add(double actual, double expected) {
    add(tensor_from({actual}, {1}, DType::kF64), tensor_from({expected}, {1}, DType::kF64));
  }
  void print(const std::string& what) const {
    std::printf("[ golden   ] %s: max abs error %.3g, max rel error %.3g\n", what.c_str(), abs,
                rel);
  }
};

::testing::AssertionResult scalar_close(double actual, double expected) {
  if (std::abs(actual - expected) <= kAtol + kRtol * std::abs(expected))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "actual " << actual << " expected " << expected
                                       << " (diff " << actual - expected << ")";
}

/// One batch of a step, read from the golden case ("step<s>.ids", ".targets", ".key_mask").
struct Batch {
  Tensor ids, targets, key_mask;
};

Batch load_batch(const GoldenCase& c, int64_t step) {
  const std::string prefix = "step" + std::to_string(step) + ".";
  Batch b;
  b.ids = c.tensor(prefix + "ids").to(DType::kI64);
  b.targets = c.tensor(prefix + "targets").to(DType::kI64);
  if (c.has(prefix + "key_mask")) b.key_mask = c.tensor(prefix + "key_mask", DType::kF32);
  return b;
}

/// A model of either kind behind one interface: the module and its loss on a batch.
struct TinyModel {
  std::shared_ptr<nn::Module> module;
  std::function<Variable(const Batch&)> loss;
};

/// The reference's configuration, every relevant field set explicitly (not left to defaults).
models::ModelOptions options_from(const nlohmann::json& cfg) {
  models::ModelOptions o;
  const std::string kind = cfg.at("kind").get<std::string>();
  o.kind = kind == "causal_lm" ? models::ModelKind::kCausalLm : models::ModelKind::kMaskedLm;
  o.vocab_size = cfg.at("vocab_size").get<int64_t>();
  o.dim = cfg.at("dim").get<int64_t>();
  o.layers = cfg.at("layers").get<int64_t>();
  o.heads = cfg.at("heads").get<int64_t>();
  o.ffn_dim = cfg.at("ffn_dim").get<int64_t>();
  // The LLaMA-style case says its block (RMSNorm, SwiGLU, no biases); the others use the
  // default block (LayerNorm, GELU erf form, biases).
  o.activation = cfg.value("activation", std::string("gelu")) == "swiglu" ? nn::Activation::kSwiglu
                                                                          : nn::Activation::kGelu;
  o.norm_kind = cfg.value("norm_kind", std::string("layer_norm")) == "rms_norm"
                    ? nn::NormKind::kRmsNorm
                    : nn::NormKind::kLayerNorm;
  o.bias = cfg.value("bias", true);
  o.norm_placement = models::NormPlacement::kPre;
  o.final_norm = true;
  o.dropout = 0.0;
  o.scale_embeddings = false;
  o.tie_embeddings = true;
  o.attention.feature_map = nn::FeatureMap::kOnePlusElu;
  o.attention.norm = nn::LinearAttentionNorm::kLayerNorm;
  o.attention.chunk_size = 5;  // N = 12 spans three chunks: the carried state is exercised
  nn::LrpeOptions lrpe;
  lrpe.core = backend::LrpeCore::kOrthogonal;  // Type 2
  lrpe.pairing = backend::LrpePairing::kAdjacent;
  lrpe.p = backend::LrpeP::kHouseholder;
  lrpe.learn_householder = true;
  lrpe.learn_theta = true;
  o.position = lrpe;
  o.add_sinusoidal = false;
  o.dtype = DType::kF64;
  return o;
}

/// Builds the model of the case and loads the reference's initial parameters (strict: every
/// entry of the model's state must be in the file and every "param." entry must be used). A
/// LoRA case gets its adapters on the layers it names, and everything but the adapters and the
/// LRPE parameters frozen (finetune.lora with train: "positional").
TinyModel build(const GoldenCase& c) {
  const models::ModelOptions o = options_from(c.config());
  Generator init_gen(0);  // overwritten by the load below
  TinyModel m;
  if (o.kind == models::ModelKind::kCausalLm) {
    auto lm = std::make_shared<models::CausalLm>(o, init_gen, nullptr);
    m.module = lm;
    m.loss = [lm](const Batch& b) { return lm->loss(b.ids, b.targets); };
  } else {
    auto lm = std::make_shared<models::MaskedLm>(o, init_gen, nullptr);
    m.module = lm;
    m.loss = [lm](const Batch& b) { return lm->loss(b.ids, b.targets, b.key_mask); };
  }
  const auto& cfg = c.config();
  const bool lora = cfg.contains("lora_targets");
  if (lora) {
    nn::LoraOptions options;
    options.rank = cfg.at("lora_rank").get<int64_t>();
    options.alpha = cfg.at("lora_alpha").get<double>();
    nn::add_lora_adapters(*m.module, cfg.at("lora_targets").get<std::vector<std::string>>(),
                          options, init_gen, nullptr);
  }
  StateDict state;
  for (const std::string& name : c.names()) {
    if (name.rfind("param.", 0) == 0) state.insert(name.substr(6), c.tensor(name, o.dtype));
  }
  m.module->load_state_dict(state, /*strict=*/true);
  if (lora) {
    std::set<std::string> positional;
    for (const auto& [name, role] : nn::parameter_roles(*m.module)) {
      if (role == nn::ParameterRole::kPositional) positional.insert(name);
    }
    for (auto& [name, p] : m.module->named_parameters()) {
      const bool trains =
          name.ends_with(".lora_a") || name.ends_with(".lora_b") || positional.count(name) != 0;
      if (!trains) Variable(p).set_requires_grad(false);
    }
  }
  return m;
}

/// The names under `prefix` in the golden file, prefix removed.
std::set<std::string> golden_names(const GoldenCase& c, const std::string& prefix) {
  std::set<std::string> out;
  for (const std::string& name : c.names()) {
    if (name.rfind(prefix, 0) == 0) out.insert(name.substr(prefix.size()));
  }
  return out;
}

std::set<std::string> parameter_names(const nn::Module& module, bool trainable_only) {
  std::set<std::string> out;
  for (const auto& [name, p] : module.named_parameters()) {
    if (p.requires_grad() || !trainable_only) out.insert(name);
  }
  return out;
}

class TrainStepGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainStepGolden, LossAndEveryGradientMatch) {
  const GoldenCase c = GoldenCase::load("train_step/" + GetParam() + ".json");
  TinyModel m = build(c);
  // Same parameter set on both sides: every trained parameter has a golden gradient and every
  // golden gradient belongs to a parameter.
  ASSERT_EQ(parameter_names(*m.module, /*trainable_only=*/true), golden_names(c, "grad."));

  const Variable loss = m.loss(load_batch(c, 0));
  loss.backward();
  MaxError loss_error, grad_error;
  EXPECT_TRUE(scalar_close(loss.item(), c.tensor("step0.loss").item())) << "loss";
  loss_error.add(loss.item(), c.tensor("step0.loss").item());
  for (const auto& [name, p] : m.module->named_parameters()) {
    if (!p.requires_grad()) {
      EXPECT_FALSE(p.grad().defined()) << name << " is frozen but got a gradient";
      continue;
    }
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    const Tensor expected = c.tensor("grad." + name);
    EXPECT_TRUE(allclose(p.grad(), expected, kRtol, kAtol)) << "grad." << name;
    grad_error.add(p.grad(), expected);
  }
  loss_error.print(GetParam() + " loss");
  grad_error.print(GetParam() + " gradients (" +
                   std::to_string(parameter_names(*m.module, true).size()) + " tensors)");
}

TEST_P(TrainStepGolden, ThreeClippedAdamWStepsMatch) {
  const GoldenCase c = GoldenCase::load("train_step/" + GetParam() + ".json");
  const auto& cfg = c.config();
  TinyModel m = build(c);
  ASSERT_EQ(parameter_names(*m.module, /*trainable_only=*/false), golden_names(c, "final."));

  const double lr = cfg.at("lr").get<double>();
  optim::AdamOptions adam;
  adam.lr = lr;
  adam.weight_decay = cfg.at("weight_decay").get<double>();
  adam.beta1 = cfg.at("beta1").get<double>();
  adam.beta2 = cfg.at("beta2").get<double>();
  adam.eps = cfg.at("eps").get<double>();
  // The recipes' policy: decay on matrices and embeddings, none on biases, norms, LRPE θ/v.
  optim::AdamW optimizer(
      optim::decay_param_groups(m.module->named_parameters(), lr, adam.weight_decay), adam);
  optim::ScheduleOptions schedule_options;
  schedule_options.name = optim::ScheduleName::kConstant;
  schedule_options.lr = lr;
  const optim::ConstantSchedule schedule(schedule_options);
  train::StepOptions step_options;
  step_options.grad_accumulation = 1;
  step_options.clip_norm = cfg.at("clip_norm").get<double>();
  train::StepRunner runner(m.module->parameters(), optimizer, schedule, step_options);

  MaxError scalar_error, param_error;
  int clipped_steps = 0;
  const int64_t steps = cfg.at("steps").get<int64_t>();
  for (int64_t s = 0; s < steps; ++s) {
    const Batch batch = load_batch(c, s);
    const train::StepResult r = runner.run([&] { return train::MicroBatch{m.loss(batch), 0}; });
    const std::string prefix = "step" + std::to_string(s) + ".";
    const double expected_loss = c.tensor(prefix + "loss").item();
    const double expected_norm = c.tensor(prefix + "grad_norm").item();
    EXPECT_TRUE(scalar_close(r.loss, expected_loss)) << prefix << "loss";
    EXPECT_TRUE(scalar_close(r.grad_norm, expected_norm)) << prefix << "grad_norm";
    EXPECT_DOUBLE_EQ(r.lr, lr);
    scalar_error.add(r.loss, expected_loss);
    scalar_error.add(r.grad_norm, expected_norm);
    if (expected_norm > step_options.clip_norm) ++clipped_steps;
  }
  // The case must exercise both branches of the clip (the reference asserts this too).
  EXPECT_GT(clipped_steps, 0);
  EXPECT_LT(clipped_steps, steps);
  for (const auto& [name, p] : m.module->named_parameters()) {
    const Tensor expected = c.tensor("final." + name);
    EXPECT_TRUE(allclose(p.data(), expected, kRtol, kAtol)) << "final." << name;
    if (!p.requires_grad()) {  // frozen: not a bit moved
      EXPECT_TRUE(allclose(p.data(), c.tensor("param." + name, DType::kF64), 0.0, 0.0)) << name;
    }
    param_error.add(p.data(), expected);
  }
  scalar_error.print(GetParam() + " step losses and grad norms");
  param_error.print(GetParam() + " parameters after " + std::to_string(steps) + " steps");
}

INSTANTIATE_TEST_SUITE_P(Models, TrainStepGolden,
                         ::testing::Values("causal_lm", "masked_lm", "causal_lm_llama",
                                           "causal_lm_lora", "causal_lm_llama_lora"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           if (info.param == "causal_lm") return std::string("CausalLm");
                           if (info.param == "masked_lm") return std::string("MaskedLm");
                           if (info.param == "causal_lm_lora") return std::string("CausalLmLora");
                           if (info.param == "causal_lm_llama_lora") {
                             return std::string("CausalLmLlamaBlockLora");
                           }
                           return std::string("CausalLmLlamaBlock");
                         });

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
