// Models: recurrent generation == full forward, greedy decoding, padding, checkpoint names.
#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/reduce.h"
#include "models/language_models.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::ModelOptions;
using testing::allclose;

/// The encodings these tests run, by test name.
nn::PositionEncoding position_named(const std::string& name) {
  if (name == "nope") return nn::NoPosition{};
  if (name == "sinusoidal") return nn::SinusoidalPosition{};
  if (name == "learned") return nn::LearnedPosition{32};
  if (name == "rope") return nn::RopePosition{};
  if (name == "permute_former") return nn::PermuteFormerPosition{};
  if (name == "lrpe") return nn::LrpeOptions{};
  throw Error("unknown test encoding '" + name + "'");
}

ModelOptions tiny(models::ModelKind kind, const std::string& position) {
  ModelOptions o;
  o.kind = kind;
  o.vocab_size = 11;
  o.dim = 8;
  o.layers = 2;
  o.heads = 2;
  o.ffn_dim = 16;
  o.position = position_named(position);
  o.dtype = DType::kF64;
  o.init_scheme = models::InitScheme::kNormal;  // N(0, init_std²), not the default
  o.init_std = 0.3;  // large enough that every layer changes the logits visibly
  return o;
}

Tensor random_ids(int64_t b, int64_t n, int64_t vocab, Generator& gen) {
  return randint({b, n}, gen, 0, vocab);
}

// token_losses: each position's cross-entropy of the full logits (computed here from forward()),
// 0 at ignored targets, the same whatever the chunking; their mean over the targets is loss().
TEST(CausalLm, TokenLossesArePerPositionCrossEntropyAndAverageToTheLoss) {
  Generator gen(5);
  models::CausalLm model(tiny(models::ModelKind::kCausalLm, "lrpe"), gen, nullptr);
  model.eval();
  const Tensor ids = random_ids(2, 9, 11, gen);
  Tensor targets = random_ids(2, 9, 11, gen);
  targets.data<int64_t>()[4] = -100;                // an ignored target
  const Tensor logits = model.forward(ids).data();  // [2, 9, 11]
  const Tensor losses = model.token_losses(ids, targets, /*rows_per_chunk=*/4);
  ASSERT_EQ(losses.shape(), (Shape{2, 9}));
  double sum = 0;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 9; ++t) {
      const int64_t target = targets.at({b, t});
      if (target < 0) {
        EXPECT_EQ(losses.at({b, t}), 0.0);
        continue;
      }
      double max = -1e300, total = 0;
      for (int64_t v = 0; v < 11; ++v) max = std::max(max, logits.at({b, t, v}));
      for (int64_t v = 0; v < 11; ++v) total += std::exp(logits.at({b, t, v}) - max);
      const double expected = max + std::log(total) - logits.at({b, t, target});
      EXPECT_NEAR(losses.at({b, t}), expected, 1e-12) << b << " " << t;
      sum += expected;
    }
  }
  EXPECT_TRUE(allclose(model.token_losses(ids, targets, 1000), losses, 0, 0));
  EXPECT_NEAR(model.loss(ids, targets).item(), sum / 17.0, 1e-12);
}

class CausalLmPositions : public ::testing::TestWithParam<std::string> {};

TEST_P(CausalLmPositions, StepLogitsEqualFullForward) {
  Generator gen(1);
  models::CausalLm model(tiny(models::ModelKind::kCausalLm, GetParam()), gen, nullptr);
  model.eval();
  const Tensor ids = random_ids(2, 9, 11, gen);
  const Tensor full = model.forward(ids).data();  // [2, 9, 11]
  auto state = model.initial_state(2);
  for (int64_t t = 0; t < 9; ++t) {
    const Tensor logits = model.step(ids.slice(1, t, t + 1).squeeze(1).contiguous(), state);
    EXPECT_TRUE(allclose(logits, full.slice(1, t, t + 1).squeeze(1), 1e-9, 1e-10))
        << GetParam() << " t=" << t;
  }
}

TEST_P(CausalLmPositions, GreedyGenerationEqualsArgmaxOfFullForward) {
  Generator gen(2);
  models::CausalLm model(tiny(models::ModelKind::kCausalLm, GetParam()), gen, nullptr);
  model.eval();
  auto argmax = [](const Tensor& row) {  // row: [V]
    const std::vector<double> v = row.to_double_vector();
    return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
  };
  // Recurrent: feed the prompt, then each argmax.
  std::vector<int64_t> tokens = {3, 1, 4};
  auto state = model.initial_state(1);
  Tensor logits;
  for (int64_t t : tokens) logits = model.step(tensor_from({double(t)}, {1}, DType::kI64), state);
  std::vector<int64_t> recurrent = tokens;
  for (int i = 0; i < 8; ++i) {
    const int64_t next = argmax(logits.squeeze(0));
    recurrent.push_back(next);
    logits = model.step(tensor_from({double(next)}, {1}, DType::kI64), state);
  }
  // Full forward over the growing sequence each time.
  std::vector<int64_t> full = tokens;
  for (int i = 0; i < 8; ++i) {
    std::vector<double> ids(full.begin(), full.end());
    const Tensor out =
        model.forward(tensor_from(ids, {1, int64_t(full.size())}, DType::kI64)).data();
    full.push_back(argmax(out.slice(1, full.size() - 1, full.size()).reshape({11})));
  }
  EXPECT_EQ(recurrent, full) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Encodings, CausalLmPositions,
                         ::testing::Values("nope", "sinusoidal", "learned", "rope",
                                           "permute_former", "lrpe"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           n.erase(std::remove(n.begin(), n.end(), '_'), n.end());
                           return n;
                         });

TEST(CausalLm, LossAndGradientsReachEveryParameter) {
  Generator gen(3);
  models::CausalLm model(tiny(models::ModelKind::kCausalLm, "lrpe"), gen, nullptr);
  const Tensor ids = random_ids(2, 6, 11, gen);
  const Tensor targets = random_ids(2, 6, 11, gen);
  const Variable loss = model.loss(ids, targets);
  EXPECT_GT(loss.item(), 0.0);
  loss.backward();
  for (const auto& [name, p] : model.named_parameters()) {
    if (!p.requires_grad()) continue;
    ASSERT_TRUE(p.grad().defined()) << name;
  }
  // Dotted PyTorch-style names.
  EXPECT_NO_THROW(model.state_dict().at("encoder.blocks.1.attn.q_proj.weight"));
  EXPECT_NO_THROW(model.state_dict().at("encoder.blocks.0.attn.lrpe.householder_v"));
}

TEST(MaskedLm, PaddingDoesNotChangeRealPositions) {
  Generator gen(4);
  models::MaskedLm model(tiny(models::ModelKind::kMaskedLm, "lrpe"), gen, nullptr);
  model.eval();
  Tensor ids = random_ids(1, 7, 11, gen);
  const Tensor mask = tensor_from({1, 1, 1, 1, 1, 0, 0}, {1, 7});
  const Tensor before = model.forward(ids, mask).data().slice(1, 0, 5);
  ids.set({0, 5}, 2);
  ids.set({0, 6}, 9);
  const Tensor after = model.forward(ids, mask).data().slice(1, 0, 5);
  EXPECT_TRUE(allclose(after, before, 1e-12, 1e-12));
}

TEST(Classifier, StartsFromMaskedLmCheckpointAndPoolsOnlyRealTokens) {
  Generator gen(5);
  ModelOptions o = tiny(models::ModelKind::kMaskedLm, "lrpe");
  models::MaskedLm mlm(o, gen, nullptr);
  o.kind = models::ModelKind::kClassifier;
  o.num_classes = 3;
  Generator gen2(6);
  models::Classifier clf(o, gen2, nullptr);
  // Every encoder entry of the masked LM loads into the classifier under the same name.
  StateDict encoder_state;
  for (const auto& [name, t] : mlm.state_dict()) {
    if (name.rfind("encoder.", 0) == 0) encoder_state.insert(name, t);
  }
  clf.load_state_dict(encoder_state, /*strict=*/false);
  EXPECT_TRUE(allclose(clf.state_dict().at("encoder.embed.weight"),
                       mlm.state_dict().at("encoder.embed.weight"), 0, 0));
  clf.eval();
  Tensor ids = random_ids(1, 6, 11, gen);
  const Tensor mask = tensor_from({1, 1, 1, 1, 0, 0}, {1, 6});
  const Tensor before = clf.forward(ids, mask).data();
  ids.set({0, 4}, 7);
  EXPECT_TRUE(allclose(clf.forward(ids, mask).data(), before, 1e-12, 1e-12));
  EXPECT_EQ(before.shape(), (Shape{1, 3}));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
