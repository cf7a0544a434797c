// Attention transfer's pieces: recorded attention inputs/outputs against the plain forward, the
// transfer loss against a hand computation (zero for a student equal to its teacher, masking =
// truncating, gradients only in the student's attention), grouped k/v expansion = grouped-query
// attention, and which parameters train.
#include "app/setup/linearize_setup.h"

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/model_setup.h"
#include "framework/autograd/ops/shape.h"
#include "framework/tensor/random.h"
#include "recipes/loader.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;

constexpr int64_t kVocab = 11;

std::string model_recipe(const std::string& attention, const std::string& position,
                         const std::string& extra = "") {
  return "version: 1\nmodel {\n  kind: CAUSAL_LM\n  width: 16\n  layers: 2\n  heads: 4\n"
         "  ffn_width: 24\n  dropout: 0\n  init_scheme: NORMAL\n  init_std: 0.3\n  attention { " +
         attention + " }\n  position { " + position + " }\n" + extra +
         "}\ndata {\n  corpus: \"tinyshakespeare\"\n  tokenizer { kind: CHAR }\n"
         "  sequence_length: 12\n  batch_size: 2\n}\ntrain { steps: 1 }\n";
}

std::shared_ptr<models::CausalLm> build(const std::string& text, uint64_t seed,
                                        DType dtype = DType::kF64) {
  const recipes::Recipe recipe = recipes::load_recipe_text(text, "linearize_setup_test.txtpb");
  models::ModelOptions options = model_options_from_recipe(recipe, kVocab);
  options.dtype = dtype;
  Generator gen(seed);
  auto model = std::make_shared<models::CausalLm>(options, gen, nullptr);
  model->eval();
  return model;
}

Tensor random_ids(int64_t batch, int64_t length, uint64_t seed) {
  Generator gen(seed);
  std::vector<double> ids(batch * length);
  for (double& id : ids) id = static_cast<double>(gen.next_u64() % kVocab);
  return tensor_from(ids, {batch, length}, DType::kI64);
}

const std::string kSoftmax = model_recipe("softmax {}", "rope {}");
const std::string kLinear = model_recipe("linear { chunk_size: 4 }", "lrpe { type: 2 }");

TEST(AttentionRecording, RecordsWhatEachBlocksAttentionSawAndGave) {
  for (const std::string& text : {kSoftmax, kLinear}) {
    const auto model = build(text, 3);
    const Tensor ids = random_ids(2, 9, 4);
    std::vector<models::TransformerBlock::AttentionIO> io;
    const Tensor recorded = model->encoder().forward_recording(ids, io).data();
    EXPECT_TRUE(allclose(recorded, model->encoder().forward(ids).data(), 0.0, 0.0));
    ASSERT_EQ(io.size(), 2u);
    // Block 0's attention input is ln1 of the embeddings; each output is the sub-layer's.
    for (size_t i = 0; i < io.size(); ++i) {
      EXPECT_EQ(io[i].input.shape(), (Shape{2, 9, 16}));
      EXPECT_TRUE(allclose(model->encoder().block(i).attention_sublayer(io[i].input).data(),
                           io[i].output.data(), 0.0, 0.0));
    }
    EXPECT_FALSE(allclose(io[0].output.data(), io[1].output.data(), 1e-3, 1e-3));
  }
}

TEST(AttentionTransferLoss, IsTheMeanOverBlocksOfTheMeanSquaredDifference) {
  const auto teacher = build(kSoftmax, 5);
  const auto student = build(kLinear, 6);
  const Tensor ids = random_ids(2, 8, 7);
  std::vector<double> per_block;
  const Variable loss = attention_transfer_loss(*teacher, *student, ids, Tensor(), &per_block);
  std::vector<models::TransformerBlock::AttentionIO> io;
  teacher->encoder().forward_recording(ids, io);
  double mean = 0.0;
  for (int64_t i = 0; i < 2; ++i) {
    const std::vector<double> s =
        student->encoder().block(i).attention_sublayer(io[i].input).data().to_double_vector();
    const std::vector<double> t = io[i].output.data().to_double_vector();
    double squared = 0.0;
    for (size_t k = 0; k < s.size(); ++k) squared += (s[k] - t[k]) * (s[k] - t[k]);
    const double expected = squared / static_cast<double>(s.size());
    EXPECT_NEAR(per_block[i], expected, 1e-12 * expected) << "block " << i;
    mean += expected / 2.0;
  }
  EXPECT_NEAR(loss.item(), mean, 1e-12 * mean);
  EXPECT_GT(mean, 1e-3);
  // A student that is its teacher has nothing to learn.
  EXPECT_EQ(attention_transfer_loss(*teacher, *teacher, ids, Tensor()).item(), 0.0);
}

TEST(AttentionTransferLoss, AMaskEqualsTruncatingACausalWindow) {
  const auto teacher = build(kSoftmax, 8);
  const auto student = build(kLinear, 9);
  const Tensor ids = random_ids(2, 10, 10);
  std::vector<double> mask(20, 0.0);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 6; ++t) mask[b * 10 + t] = 1.0;
  }
  std::vector<double> masked, truncated;
  const double a = attention_transfer_loss(*teacher, *student, ids,
                                           tensor_from(mask, {2, 10}, DType::kF32), &masked)
                       .item();
  const Tensor first = narrow(Variable(ids), 1, 0, 6).data().contiguous();
  const double b = attention_transfer_loss(*teacher, *student, first, Tensor(), &truncated).item();
  EXPECT_NEAR(a, b, 1e-12 * b);
  for (size_t i = 0; i < masked.size(); ++i) EXPECT_NEAR(masked[i], truncated[i], 1e-12);
}

TEST(AttentionTransferLoss, TrainsOnlyTheStudentsAttentionAndMatchesCentralDifferences) {
  const auto teacher = build(kSoftmax, 11);
  const auto student = build(kLinear, 12);
  for (auto& [name, p] : teacher->named_parameters()) Variable(p).set_requires_grad(false);
  EXPECT_EQ(freeze_all_but_attention(*student, /*train_projections=*/true), 19);
  const Tensor ids = random_ids(2, 7, 13);
  attention_transfer_loss(*teacher, *student, ids, Tensor()).backward();
  for (const auto& [name, p] : student->named_parameters()) {
    const bool attention = name.find(".attn.") != std::string::npos;
    EXPECT_EQ(p.requires_grad(), attention) << name;
    EXPECT_EQ(p.grad().defined(), attention) << name;
  }
  // d loss / d θ of block 1's LRPE against a central difference.
  int checked = 0;
  for (const auto& [name, p] : student->named_parameters()) {
    if (name != "encoder.blocks.1.attn.lrpe.theta") continue;
    ++checked;
    const Tensor grad = p.grad().clone();
    Tensor data = p.data();
    const double eps = 1e-6;
    std::vector<double> values = data.to_double_vector();
    for (size_t k = 0; k < values.size(); ++k) {
      std::vector<double> plus = values, minus = values;
      plus[k] += eps;
      minus[k] -= eps;
      data.copy_from(tensor_from(plus, data.shape(), data.dtype()));
      const double up = attention_transfer_loss(*teacher, *student, ids, Tensor()).item();
      data.copy_from(tensor_from(minus, data.shape(), data.dtype()));
      const double down = attention_transfer_loss(*teacher, *student, ids, Tensor()).item();
      data.copy_from(tensor_from(values, data.shape(), data.dtype()));
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad.to_double_vector()[k], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << "theta[" << k << "]";
    }
  }
  EXPECT_EQ(checked, 1);
}

TEST(FreezeAllButAttention, WithoutProjectionsOnlyTheNewParametersTrain) {
  const auto student = build(kLinear, 14);
  freeze_all_but_attention(*student, /*train_projections=*/false);
  std::set<std::string> trained;
  for (const auto& [name, p] : student->named_parameters()) {
    if (p.requires_grad()) trained.insert(name);
  }
  std::set<std::string> expected;
  for (int b = 0; b < 2; ++b) {
    for (const char* n : {"norm.weight", "norm.bias", "lrpe.theta", "lrpe.householder_v"}) {
      expected.insert("encoder.blocks." + std::to_string(b) + ".attn." + n);
    }
  }
  EXPECT_EQ(trained, expected);
}

TEST(ExpandGroupedKv, AGroupedQueryModelEqualsItsExpandedFullHeadCopy) {
  const auto grouped = build(model_recipe("softmax {}", "rope {}", "  kv_heads: 2\n"), 15);
  const auto full = build(kSoftmax, 16);
  StateDict state = grouped->state_dict();
  const std::vector<std::string> changed = expand_grouped_kv(state, 4, 2, 4);
  // k and v weights and biases of both blocks.
  EXPECT_EQ(changed.size(), 8u);
  full->load_state_dict(state, /*strict=*/true);
  const Tensor ids = random_ids(2, 9, 17);
  EXPECT_TRUE(allclose(full->forward(ids).data(), grouped->forward(ids).data(), 1e-12, 1e-12));
  // Rows: kv head ⌊h/2⌋ for query head h.
  const std::vector<double> k = state.at("encoder.blocks.0.attn.k_proj.weight").to_double_vector();
  const std::vector<double> g =
      grouped->state_dict().at("encoder.blocks.0.attn.k_proj.weight").to_double_vector();
  for (int64_t h = 0; h < 4; ++h) {
    for (int64_t r = 0; r < 4 * 16; ++r) EXPECT_EQ(k[h * 64 + r], g[(h / 2) * 64 + r]);
  }
  StateDict unchanged = full->state_dict();
  EXPECT_TRUE(expand_grouped_kv(unchanged, 4, 4, 4).empty());
  EXPECT_TRUE(expand_grouped_kv(unchanged, 4, 0, 4).empty());
  rota::testing::expect_error([&] { expand_grouped_kv(unchanged, 4, 3, 4); }, "do not group");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
