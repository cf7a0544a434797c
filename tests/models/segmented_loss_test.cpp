// A causal LM's loss run in segments (ModelOptions::segment_length): the whole sequence's loss and
// every parameter's gradient for each linear-attention encoding, in f64 to 1e-10 and f32 to
// rounding; bounded memory; models that cannot carry a state refused. Windows that continue a
// carried state (CausalLm::continued_loss, train.carry_state): the whole stream's losses, and
// gradients truncated at the window's start.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/tensor/storage.h"
#include "models/language_models.h"
#include "tests/models/model_variants.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::ModelOptions;
using models::testing::base;
using models::testing::Variant;
using models::testing::variants;

struct Pass {
  double loss = 0;
  std::vector<std::pair<std::string, Tensor>> grads;
};

Pass causal_pass(ModelOptions o, int64_t segment_length, const Tensor& ids, const Tensor& targets) {
  o.segment_length = segment_length;
  Generator init(3);
  models::CausalLm model(o, init, std::make_shared<Generator>(5));
  model.train();
  const Variable loss = model.loss(ids, targets);
  loss.backward();
  Pass pass{loss.item(), {}};
  for (const auto& [name, p] : model.named_parameters()) pass.grads.emplace_back(name, p.grad());
  return pass;
}

// |a − b| ≤ tol · max(1, max|b|) elementwise (a scale-aware closeness for gradients).
void expect_close(const Tensor& actual, const Tensor& expected, double tol,
                  const std::string& what) {
  ASSERT_EQ(actual.defined(), expected.defined()) << what;
  if (!expected.defined()) return;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<double> a = actual.to_double_vector();
  const std::vector<double> e = expected.to_double_vector();
  double scale = 1.0;
  for (double x : e) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_LE(std::abs(a[i] - e[i]), tol * scale) << what << " element " << i;
  }
}

void expect_same_pass(const Pass& segmented, const Pass& whole, double tol) {
  EXPECT_LE(std::abs(segmented.loss - whole.loss), tol * std::abs(whole.loss));
  ASSERT_EQ(segmented.grads.size(), whole.grads.size());
  size_t with_gradient = 0;
  for (size_t i = 0; i < whole.grads.size(); ++i) {
    ASSERT_EQ(segmented.grads[i].first, whole.grads[i].first);
    expect_close(segmented.grads[i].second, whole.grads[i].second, tol, whole.grads[i].first);
    if (whole.grads[i].second.defined()) ++with_gradient;
  }
  EXPECT_GE(with_gradient, 3 * whole.grads.size() / 4);
}

TEST(SegmentedLoss, EveryEncodingMatchesTheWholeSequenceInDouble) {
  Generator gen(9);
  const Tensor ids = randint({2, 11}, gen, 0, 17);
  Tensor targets = randint({2, 11}, gen, 0, 17);
  targets.set({0, 4}, -100);  // ignored targets count in neither the sum nor the mean
  targets.set({1, 10}, -100);
  for (const Variant& v : variants(DType::kF64)) {
    SCOPED_TRACE(v.name);
    const Pass whole = causal_pass(v.options, 0, ids, targets);
    for (int64_t segment : {1, 4, 5, 10}) {
      SCOPED_TRACE("segment " + std::to_string(segment));
      expect_same_pass(causal_pass(v.options, segment, ids, targets), whole, 1e-10);
    }
  }
}

TEST(SegmentedLoss, FloatMatchesTheWholeSequenceToRounding) {
  Generator gen(10);
  const Tensor ids = randint({2, 37}, gen, 0, 17);
  const Tensor targets = randint({2, 37}, gen, 0, 17);
  for (const Variant& v : variants(DType::kF32)) {
    SCOPED_TRACE(v.name);
    const Pass whole = causal_pass(v.options, 0, ids, targets);
    expect_same_pass(causal_pass(v.options, 8, ids, targets), whole, 2e-5);
  }
}

TEST(SegmentedLoss, EvaluationWithoutGradientsGivesTheSameLoss) {
  ModelOptions o = base(DType::kF64);
  Generator gen(11);
  const Tensor ids = randint({2, 13}, gen, 0, 17);
  const Tensor targets = randint({2, 13}, gen, 0, 17);
  std::vector<double> losses;
  for (int64_t segment : {0, 3}) {
    o.segment_length = segment;
    Generator init(3);
    models::CausalLm model(o, init, std::make_shared<Generator>(5));
    model.eval();
    NoGradGuard no_grad;
    losses.push_back(model.loss(ids, targets).item());
  }
  EXPECT_NEAR(losses[1], losses[0], 1e-12 * std::abs(losses[0]));
}

// Per-position losses (rota eval --by-position) run the trunk in segments too: the same values.
TEST(SegmentedLoss, TokenLossesMatchTheWholeSequence) {
  Generator gen(13);
  const Tensor ids = randint({2, 23}, gen, 0, 17);
  const Tensor targets = randint({2, 23}, gen, 0, 17);
  for (const Variant& v : variants(DType::kF64)) {
    SCOPED_TRACE(v.name);
    std::vector<Tensor> losses;
    for (int64_t segment : {0, 5}) {
      ModelOptions o = v.options;
      o.segment_length = segment;
      Generator init(3);
      models::CausalLm model(o, init, std::make_shared<Generator>(5));
      model.eval();
      losses.push_back(model.token_losses(ids, targets, 7));
    }
    expect_close(losses[1], losses[0], 1e-12, "token losses");
  }
}

// Peak tensor bytes of one f32 training pass over one sequence of `n` tokens.
int64_t peak_training_bytes(int64_t n, int64_t segment_length) {
  ModelOptions o = base(DType::kF32);
  o.dim = 64;
  o.ffn_dim = 256;
  o.layers = 4;
  o.heads = 4;
  o.vocab_size = 64;
  o.attention.chunk_size = 64;
  o.segment_length = segment_length;
  Generator init(3);
  models::CausalLm model(o, init, std::make_shared<Generator>(5));
  model.train();
  Generator gen(4);
  const Tensor ids = randint({1, n}, gen, 0, 64);
  const Tensor targets = randint({1, n}, gen, 0, 64);
  reset_storage_peak();
  const int64_t before = storage_stats().live_bytes;
  model.loss(ids, targets).backward();
  return storage_stats().peak_bytes - before;
}

TEST(SegmentedLoss, MemoryFollowsTheSegmentNotTheSequence) {
  const int64_t whole = peak_training_bytes(4096, 0);
  const int64_t segmented = peak_training_bytes(4096, 256);
  const int64_t longer = peak_training_bytes(16384, 256);
  // 16 segments' activations against one: far below the whole pass; and 4x the tokens add only
  // their boundary states (4 blocks × 4 heads × 16 × 16 floats per boundary) and token ids.
  EXPECT_LT(segmented * 4, whole) << "whole " << whole << " B, segmented " << segmented << " B";
  EXPECT_LT(longer, segmented * 5 / 4) << "4096 tokens " << segmented << " B, 16384: " << longer;
}

TEST(SegmentedLoss, ModelsWithoutACarriedStateAreRefused) {
  Generator gen(12);
  const Tensor ids = randint({1, 9}, gen, 0, 17);
  ModelOptions softmax = base(DType::kF64);
  softmax.attention_family = models::AttentionFamily::kSoftmax;
  softmax.position = nn::RopePosition{};
  ModelOptions hybrid = base(DType::kF64);
  models::HybridOptions h;
  h.blocks = {1};
  h.attention_family = models::AttentionFamily::kSoftmax;
  h.position = nn::RopePosition{};
  hybrid.hybrid = h;
  for (ModelOptions o : {softmax, hybrid}) {
    o.segment_length = 4;
    Generator init(3);
    models::CausalLm model(o, init, std::make_shared<Generator>(5));
    model.train();
    testing::expect_error([&] { model.loss(ids, ids); },
                          "need a causal LM whose blocks are all linear attention");
  }
}

// Windows of a stream that continue the carried state, with and without segments inside them,
// give each token the loss the whole stream read in one piece gives it (forward: the carried
// state is exact), both through continued_loss (the window's mean) and token_losses; the carried
// position runs on.
TEST(ContinuedLoss, WindowsCarryingTheStateGiveTheWholeStreamsLosses) {
  Generator gen(14);
  const int64_t n = 23;
  const Tensor ids = randint({2, n}, gen, 0, 17);
  Tensor targets = randint({2, n}, gen, 0, 17);
  targets.set({1, 9}, -100);
  const std::vector<std::pair<int64_t, int64_t>> windows = {{0, 7}, {7, 7}, {14, 9}};
  for (const Variant& v : variants(DType::kF64)) {
    SCOPED_TRACE(v.name);
    Tensor whole;
    {
      Generator init(3);
      models::CausalLm model(v.options, init, std::make_shared<Generator>(5));
      model.eval();
      whole = model.token_losses(ids, targets);  // [2, n], one forward pass
    }
    for (int64_t segment : {0, 3}) {
      SCOPED_TRACE("segment " + std::to_string(segment));
      ModelOptions o = v.options;
      o.segment_length = segment;
      Generator init(3);
      models::CausalLm model(o, init, std::make_shared<Generator>(5));
      model.train();
      models::CausalLm::CarriedState for_loss, for_tokens;
      for (const auto& [start, len] : windows) {
        const Tensor window_ids = ids.narrow(1, start, len).contiguous();
        const Tensor window_targets = targets.narrow(1, start, len).contiguous();
        double sum = 0;
        int64_t count = 0;
        for (int64_t b = 0; b < 2; ++b) {
          for (int64_t t = start; t < start + len; ++t) {
            if (targets.at({b, t}) == -100) continue;
            sum += whole.at({b, t});
            ++count;
          }
        }
        const Variable loss = model.continued_loss(window_ids, window_targets, for_loss);
        EXPECT_NEAR(loss.item(), sum / count, 1e-10 * sum / count) << "window at " << start;
        EXPECT_EQ(for_loss.position, start + len);
        EXPECT_EQ(for_loss.states.size(), 2u);
        const Tensor tokens = model.token_losses(window_ids, window_targets, 5, &for_tokens);
        expect_close(tokens, whole.narrow(1, start, len).contiguous(), 1e-10, "token losses");
        EXPECT_EQ(for_tokens.position, start + len);
      }
    }
  }
}

// The gradient of a continued window is that of its loss with the carried state held constant
// (central differences through continued_loss with the same carried state), and differs from
// the gradient that flows back into the earlier window (the whole stream's loss over the same
// targets): backpropagation is truncated at the window's start.
TEST(ContinuedLoss, GradientsStopAtTheWindowsStart) {
  Generator gen(15);
  const int64_t n = 12, cut = 5;
  const Tensor ids = randint({2, n}, gen, 0, 17);
  const Tensor targets = randint({2, n}, gen, 0, 17);
  Tensor later_targets = targets.clone();  // only the second window's targets count
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < cut; ++t) later_targets.set({b, t}, -100);
  }
  const std::vector<Variant> all = variants(DType::kF64);
  for (const Variant& v : all) {
    if (v.name != "LRPE type 2" && v.name != "GLA" && v.name != "DeltaNet" &&
        v.name != "sinusoidal absolute") {
      continue;
    }
    SCOPED_TRACE(v.name);
    Generator init(3);
    models::CausalLm model(v.options, init, std::make_shared<Generator>(5));
    model.train();
    models::CausalLm::CarriedState carried;
    (void)model.continued_loss(ids.narrow(1, 0, cut).contiguous(),
                               targets.narrow(1, 0, cut).contiguous(), carried);
    const Tensor second_ids = ids.narrow(1, cut, n - cut).contiguous();
    const Tensor second_targets = targets.narrow(1, cut, n - cut).contiguous();
    std::vector<Variable> leaves;
    for (const auto& [name, p] : model.named_parameters()) {
      if (name.rfind("encoder.blocks.0.attn", 0) == 0) leaves.push_back(p);
    }
    ASSERT_FALSE(leaves.empty());
    const auto truncated = [&] {
      models::CausalLm::CarriedState state = carried;
      return model.continued_loss(second_ids, second_targets, state);
    };
    EXPECT_TRUE(testing::gradcheck_variables(truncated, leaves));
    // The same targets through the whole stream: the gradient also flows into window one.
    for (Variable& p : leaves) p.zero_grad();
    truncated().backward();
    std::vector<Tensor> truncated_grads;
    for (const Variable& p : leaves) truncated_grads.push_back(p.grad().clone());
    for (Variable& p : leaves) p.zero_grad();
    const Variable full = model.loss(ids, later_targets);
    EXPECT_NEAR(full.item(), truncated().item(), 1e-10 * full.item());  // the same value
    full.backward();
    double largest_difference = 0;
    for (size_t i = 0; i < leaves.size(); ++i) {
      const std::vector<double> a = truncated_grads[i].to_double_vector();
      const std::vector<double> b = leaves[i].grad().to_double_vector();
      for (size_t j = 0; j < a.size(); ++j) {
        largest_difference = std::max(largest_difference, std::abs(a[j] - b[j]));
      }
    }
    EXPECT_GT(largest_difference, 1e-6);
  }
}

TEST(ContinuedLoss, RefusesStatesForAnotherNumberOfBlocks) {
  Generator init(3);
  models::CausalLm model(base(DType::kF64), init, std::make_shared<Generator>(5));
  Generator gen(16);
  const Tensor ids = randint({1, 6}, gen, 0, 17);
  models::CausalLm::CarriedState carried;
  carried.position = 6;
  carried.states = {zeros({1, 2, 8, 8}, DType::kF64)};
  testing::expect_error([&] { model.continued_loss(ids, ids, carried); },
                        "1 carried states for 2 blocks");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
