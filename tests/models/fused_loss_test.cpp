// Language-model losses go through the fused projection + cross-entropy: same loss and
// parameter gradients as cross_entropy over forward()'s logits (tied, untied, masked LM).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/loss.h"
#include "models/language_models.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::ModelOptions;
using testing::allclose;

ModelOptions tiny(models::ModelKind kind, bool tied, DType dtype) {
  ModelOptions o;
  o.kind = kind;
  o.vocab_size = 13;
  o.dim = 8;
  o.layers = 2;
  o.heads = 2;
  o.ffn_dim = 16;
  o.tie_embeddings = tied;
  o.dtype = dtype;
  o.init_scheme = models::InitScheme::kNormal;  // N(0, init_std²), not the default
  o.init_std = 0.3;  // large enough that every layer changes the logits visibly
  return o;
}

// Loss and every parameter's gradient after backward.
struct LossAndGrads {
  double loss = 0;
  std::vector<std::pair<std::string, Tensor>> grads;
};

LossAndGrads run(nn::Module& model, const std::function<Variable()>& loss_fn) {
  for (auto& [name, p] : model.named_parameters()) p.zero_grad();
  const Variable loss = loss_fn();
  loss.backward();
  LossAndGrads out{loss.item(), {}};
  for (const auto& [name, p] : model.named_parameters()) out.grads.emplace_back(name, p.grad());
  return out;
}

void expect_same(const LossAndGrads& fused, const LossAndGrads& composed, double rtol,
                 double atol) {
  EXPECT_NEAR(fused.loss, composed.loss, rtol * std::fabs(composed.loss));
  ASSERT_EQ(fused.grads.size(), composed.grads.size());
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    SCOPED_TRACE(fused.grads[i].first);
    ASSERT_TRUE(fused.grads[i].second.defined() && composed.grads[i].second.defined());
    EXPECT_TRUE(allclose(fused.grads[i].second, composed.grads[i].second, rtol, atol));
  }
}

bool has_parameter(const nn::Module& model, const std::string& wanted) {
  for (const auto& [name, p] : model.named_parameters()) {
    if (name == wanted) return true;
  }
  return false;
}

struct Tolerance {
  DType dtype;
  double rtol, atol;
};

const std::vector<Tolerance> kDtypes = {{DType::kF64, 1e-11, 1e-13}, {DType::kF32, 1e-5, 1e-6}};

TEST(FusedLoss, CausalLmTiedAndUntiedMatchCrossEntropyOfLogits) {
  for (const Tolerance& t : kDtypes) {
    for (bool tied : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(t.dtype)) + (tied ? " tied" : " untied"));
      Generator gen(1);
      models::CausalLm model(tiny(models::ModelKind::kCausalLm, tied, t.dtype), gen, nullptr);
      EXPECT_EQ(has_parameter(model, "lm_head.weight"), !tied);
      const Tensor ids = randint({2, 9}, gen, 0, 13);
      Tensor targets = randint({2, 9}, gen, 0, 13);
      targets.set({1, 8}, -100);  // e.g. a padded last position
      EXPECT_EQ(model.loss(ids, targets).grad_fn()->name(), "linear_cross_entropy");
      const LossAndGrads fused = run(model, [&] { return model.loss(ids, targets); });
      const LossAndGrads composed =
          run(model, [&] { return cross_entropy(model.forward(ids), targets); });
      expect_same(fused, composed, t.rtol, t.atol);
    }
  }
}

TEST(FusedLoss, MaskedLmMatchesCrossEntropyOfLogits) {
  for (const Tolerance& t : kDtypes) {
    SCOPED_TRACE(dtype_name(t.dtype));
    Generator gen(2);
    models::MaskedLm model(tiny(models::ModelKind::kMaskedLm, true, t.dtype), gen, nullptr);
    // A non-zero output bias, so that its gradient and its part in the logits are exercised.
    ASSERT_TRUE(has_parameter(model, "mlm_bias"));
    for (const auto& [name, p] : model.named_parameters()) {
      if (name == "mlm_bias") {
        Tensor data = p.data();
        data.copy_from(randn({13}, gen, 0.0, 1.0, t.dtype));
      }
    }
    const Tensor ids = randint({2, 8}, gen, 0, 13);
    const Tensor mask = tensor_from({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 8});
    // Masked positions only; the rest (and padding) ignored.
    Tensor targets = full({2, 8}, -100, DType::kI64);
    for (const auto& [b, i] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 5}, {1, 2}}) {
      targets.set({b, i}, static_cast<double>((b * 8 + i) % 13));
    }
    EXPECT_EQ(model.loss(ids, targets, mask).grad_fn()->name(), "linear_cross_entropy");
    const LossAndGrads fused = run(model, [&] { return model.loss(ids, targets, mask); });
    const LossAndGrads composed =
        run(model, [&] { return cross_entropy(model.forward(ids, mask), targets); });
    expect_same(fused, composed, t.rtol, t.atol);
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
