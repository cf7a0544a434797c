// Block recomputation (ModelOptions::recompute_blocks): the same loss, gradients and dropout stream
// as a plain training pass, in less memory.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/storage.h"
#include "models/language_models.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::AttentionFamily;
using models::HybridOptions;
using models::ModelOptions;

// Bit-for-bit equality of two tensors (or both undefined: a frozen parameter's gradient).
void expect_same_bits(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.defined(), expected.defined()) << what;
  if (!expected.defined()) return;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<double> a = actual.to_double_vector();
  const std::vector<double> e = expected.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], e[i]) << what << " element " << i;
}

struct Variant {
  std::string name;
  ModelOptions options;
};

ModelOptions base(DType dtype) {
  ModelOptions o;
  o.vocab_size = 17;
  o.dim = 16;
  o.layers = 3;
  o.heads = 2;
  o.ffn_dim = 24;
  o.dropout = 0.2;  // every block draws masks: the recomputation must draw the same ones
  o.init_scheme = models::InitScheme::kNormal;  // N(0, init_std²), not the default
  o.init_std = 0.3;
  o.dtype = dtype;
  o.attention.chunk_size = 4;  // several chunks per sequence
  return o;
}

std::vector<Variant> variants(DType dtype) {
  std::vector<Variant> out;
  out.push_back({"linear LRPE", base(dtype)});
  ModelOptions softmax = base(dtype);
  softmax.attention_family = AttentionFamily::kSoftmax;
  softmax.position = nn::RopePosition{};
  out.push_back({"softmax RoPE", softmax});
  ModelOptions t5 = softmax;  // one bias table shared by every block (owned by the first)
  t5.position = nn::T5Position{};
  out.push_back({"softmax T5", t5});
  ModelOptions hybrid = base(dtype);
  HybridOptions h;
  h.blocks = {1};
  h.attention_family = AttentionFamily::kSoftmax;
  h.position = nn::RopePosition{};
  hybrid.hybrid = h;
  out.push_back({"hybrid", hybrid});
  ModelOptions gla = base(dtype);
  gla.position = nn::NoPosition{};
  gla.attention.state_gate.gating = nn::StateGating::kGla;
  gla.attention.state_gate.gla_rank = 4;
  out.push_back({"GLA", gla});
  ModelOptions delta = base(dtype);
  delta.position = nn::NoPosition{};
  delta.attention.state_gate.gating = nn::StateGating::kSsd;
  delta.attention.state_gate.rule = nn::UpdateRule::kDelta;
  out.push_back({"gated delta rule", delta});
  return out;
}

struct Pass {
  double loss = 0;
  std::vector<std::pair<std::string, Tensor>> grads;
  Generator::State dropout_after{};
};

// One training pass (loss + backward) of a causal LM built from `o` with fixed seeds.
Pass causal_pass(ModelOptions o, bool recompute, const Tensor& ids, const Tensor& targets) {
  o.recompute_blocks = recompute;
  Generator init(3);
  auto dropout = std::make_shared<Generator>(5);
  models::CausalLm model(o, init, dropout);
  model.train();
  const Variable loss = model.loss(ids, targets);
  loss.backward();
  Pass pass{loss.item(), {}, dropout->state()};
  for (const auto& [name, p] : model.named_parameters()) pass.grads.emplace_back(name, p.grad());
  return pass;
}

void expect_same_pass(const Pass& recomputed, const Pass& plain) {
  EXPECT_EQ(recomputed.loss, plain.loss);
  EXPECT_EQ(recomputed.dropout_after, plain.dropout_after);
  ASSERT_EQ(recomputed.grads.size(), plain.grads.size());
  size_t with_gradient = 0;
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    ASSERT_EQ(recomputed.grads[i].first, plain.grads[i].first);
    expect_same_bits(recomputed.grads[i].second, plain.grads[i].second, plain.grads[i].first);
    if (plain.grads[i].second.defined()) ++with_gradient;
  }
  EXPECT_GE(with_gradient, 3 * plain.grads.size() / 4);  // (RoPE's θ is fixed)
}

TEST(RecomputeBlocks, CausalLmGradientsAreBitIdentical) {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    for (const Variant& v : variants(dtype)) {
      SCOPED_TRACE(v.name + " " + dtype_name(dtype));
      Generator gen(9);
      const Tensor ids = randint({2, 11}, gen, 0, 17);
      const Tensor targets = randint({2, 11}, gen, 0, 17);
      const Pass plain = causal_pass(v.options, false, ids, targets);
      const Pass again = causal_pass(v.options, true, ids, targets);
      expect_same_pass(again, plain);
    }
  }
}

TEST(RecomputeBlocks, MaskedLmWithPaddingIsBitIdentical) {
  // Bidirectional blocks with a key mask (the mask is an input of every recomputed block).
  ModelOptions o = base(DType::kF64);
  o.kind = models::ModelKind::kMaskedLm;
  const Tensor ids =
      tensor_from({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 0}, {2, 8}, DType::kI64);
  const Tensor mask = tensor_from({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 8});
  Tensor targets = full({2, 8}, -100, DType::kI64);
  targets.set({0, 3}, 5);
  targets.set({1, 1}, 9);
  std::vector<Pass> passes;
  for (bool recompute : {false, true}) {
    o.recompute_blocks = recompute;
    Generator init(3);
    auto dropout = std::make_shared<Generator>(5);
    models::MaskedLm model(o, init, dropout);
    model.train();
    const Variable loss = model.loss(ids, targets, mask);
    loss.backward();
    Pass pass{loss.item(), {}, dropout->state()};
    for (const auto& [name, p] : model.named_parameters()) pass.grads.emplace_back(name, p.grad());
    passes.push_back(pass);
  }
  expect_same_pass(passes[1], passes[0]);
}

TEST(RecomputeBlocks, EvaluationIsUnchangedAndSavesNothing) {
  // In eval mode (no dropout) the forward is the plain one: same logits, and no second pass.
  const ModelOptions o = base(DType::kF64);
  Generator gen(9);
  const Tensor ids = randint({2, 11}, gen, 0, 17);
  std::vector<Tensor> logits;
  for (bool recompute : {false, true}) {
    ModelOptions with = o;
    with.recompute_blocks = recompute;
    Generator init(3);
    models::CausalLm model(with, init, std::make_shared<Generator>(5));
    model.eval();
    logits.push_back(model.forward(ids).data());
  }
  expect_same_bits(logits[1], logits[0], "logits");
}

// Peak tensor bytes of one training pass of a 6-block f32 model over 2 × 512 tokens.
int64_t peak_training_bytes(bool recompute) {
  ModelOptions o = base(DType::kF32);
  o.dim = 64;
  o.ffn_dim = 256;
  o.layers = 6;
  o.heads = 4;
  o.vocab_size = 64;
  o.attention.chunk_size = 64;
  o.recompute_blocks = recompute;
  Generator init(3);
  models::CausalLm model(o, init, std::make_shared<Generator>(5));
  model.train();
  Generator gen(4);
  const Tensor ids = randint({2, 512}, gen, 0, 64);
  const Tensor targets = randint({2, 512}, gen, 0, 64);
  reset_storage_peak();
  const int64_t before = storage_stats().live_bytes;
  model.loss(ids, targets).backward();
  return storage_stats().peak_bytes - before;
}

TEST(RecomputeBlocks, ATrainingPassHoldsLessThanHalfTheActivations) {
  const int64_t plain = peak_training_bytes(false);
  const int64_t recompute = peak_training_bytes(true);
  // Six blocks' saved tensors against their inputs plus one block's: well under half.
  EXPECT_LT(recompute * 2, plain) << "plain " << plain << " B, recomputed " << recompute << " B";
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
