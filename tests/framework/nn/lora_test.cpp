// Low-rank adapters on Linear layers: the adapter's value against a hand-written double loop,
// central-difference gradients of every tensor, the fused paths (shared-input projections, the
// feed-forward) against the merged weight, merging, target selection and refusals.
#include "framework/nn/lora.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/nn/feed_forward.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

namespace rota::nn {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;
using rota::testing::expect_error;

LoraOptions lora(int64_t rank, double alpha, double dropout = 0.0) {
  LoraOptions o;
  o.rank = rank;
  o.alpha = alpha;
  o.dropout = dropout;
  return o;
}

// B starts at zero; tests that need the adapter to matter give it random values.
void randomize_b(Linear& layer, Generator& gen) {
  Tensor b = layer.lora_b().data();
  b.copy_from(randn(layer.lora_b().shape(), gen, 0, 0.5, DType::kF64));
}

// y[t, o] = Σ_i x[t, i] W[o, i] + b[o] + (α/r) Σ_j B[o, j] Σ_i A[j, i] x[t, i], in plain loops.
std::vector<double> adapted_by_hand(const Linear& layer, const Tensor& x) {
  const int64_t in = layer.options().in_features, out = layer.options().out_features;
  const int64_t rank = layer.lora_options().rank;
  const double scale = layer.lora_options().alpha / static_cast<double>(rank);
  const std::vector<double> xs = x.to_double_vector(), w = layer.weight().data().to_double_vector(),
                            a = layer.lora_a().data().to_double_vector(),
                            b = layer.lora_b().data().to_double_vector();
  const std::vector<double> bias =
      layer.options().bias ? layer.bias().data().to_double_vector() : std::vector<double>(out, 0.0);
  const int64_t rows = x.numel() / in;
  std::vector<double> y(rows * out);
  for (int64_t t = 0; t < rows; ++t) {
    std::vector<double> ax(rank, 0.0);
    for (int64_t j = 0; j < rank; ++j) {
      for (int64_t i = 0; i < in; ++i) ax[j] += a[j * in + i] * xs[t * in + i];
    }
    for (int64_t o = 0; o < out; ++o) {
      double base = bias[o], delta = 0.0;
      for (int64_t i = 0; i < in; ++i) base += w[o * in + i] * xs[t * in + i];
      for (int64_t j = 0; j < rank; ++j) delta += b[o * rank + j] * ax[j];
      y[t * out + o] = base + scale * delta;
    }
  }
  return y;
}

TEST(LoraLinear, StartsAsTheLayerItAdaptsAndRegistersItsTensors) {
  Generator gen(3);
  Linear layer(LinearOptions{7, 5, true, DType::kF64}, gen);
  const Tensor x = randn({2, 4, 7}, gen, 0, 1, DType::kF64);
  const Tensor before = layer.forward(Variable(x)).data().contiguous();
  layer.add_lora(lora(3, 6.0), gen, nullptr);
  ASSERT_TRUE(layer.has_lora());
  EXPECT_EQ(layer.lora_a().shape(), (Shape{3, 7}));
  EXPECT_EQ(layer.lora_b().shape(), (Shape{5, 3}));
  EXPECT_TRUE(layer.lora_a().requires_grad());
  EXPECT_TRUE(layer.lora_b().requires_grad());
  // A ~ U(±1/√in): inside the bound and not all zero; B = 0, so the output is unchanged.
  const double bound = 1.0 / std::sqrt(7.0);
  double largest = 0.0;
  for (double v : layer.lora_a().data().to_double_vector()) {
    EXPECT_LE(std::abs(v), bound);
    largest = std::max(largest, std::abs(v));
  }
  EXPECT_GT(largest, 0.5 * bound);
  for (double v : layer.lora_b().data().to_double_vector()) EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(allclose(layer.forward(Variable(x)).data(), before, 0.0, 0.0));
  std::set<std::string> names;
  for (const auto& [name, p] : layer.named_parameters()) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"weight", "bias", "lora_a", "lora_b"}));
}

TEST(LoraLinear, ForwardIsTheLayerPlusTheScaledLowRankProduct) {
  for (const bool bias : {true, false}) {
    Generator gen(5);
    Linear layer(LinearOptions{6, 4, bias, DType::kF64}, gen);
    layer.add_lora(lora(2, 3.0), gen, nullptr);
    randomize_b(layer, gen);
    const Tensor x = randn({3, 5, 6}, gen, 0, 1, DType::kF64);
    const Tensor y = layer.forward(Variable(x)).data();
    EXPECT_EQ(y.shape(), (Shape{3, 5, 4}));
    const Tensor expected = tensor_from(adapted_by_hand(layer, x), {3, 5, 4}, DType::kF64);
    EXPECT_TRUE(allclose(y, expected, 1e-13, 1e-13)) << "bias " << bias;
  }
}

TEST(LoraLinear, GradientsOfInputWeightBiasAndBothAdaptersMatchCentralDifferences) {
  Generator gen(7);
  Linear layer(LinearOptions{5, 4, true, DType::kF64}, gen);
  layer.add_lora(lora(2, 5.0), gen, nullptr);
  randomize_b(layer, gen);
  Variable x(randn({2, 3, 5}, gen, 0, 1, DType::kF64), true);
  EXPECT_TRUE(rota::testing::gradcheck_variables(
      [&] { return layer.forward(x); },
      {x, layer.weight(), layer.bias(), layer.lora_a(), layer.lora_b()}));
}

TEST(LoraLinear, DropoutActsOnTheAdapterInputOnlyAndOnlyWhileTraining) {
  Generator gen(9);
  auto dropout_gen = std::make_shared<Generator>(10);
  Linear layer(LinearOptions{8, 6, true, DType::kF64}, gen);
  layer.add_lora(lora(4, 4.0, 0.5), gen, dropout_gen);
  const Tensor x = randn({4, 8}, gen, 0, 1, DType::kF64);
  // B = 0: whatever the dropout draws, the output is the frozen layer's.
  const Tensor plain = linear(Variable(x), layer.weight(), layer.bias()).data();
  layer.train(true);
  EXPECT_TRUE(allclose(layer.forward(Variable(x)).data(), plain, 0.0, 0.0));
  randomize_b(layer, gen);
  layer.train(false);
  const Tensor evaluated = layer.forward(Variable(x)).data();
  EXPECT_TRUE(allclose(evaluated, tensor_from(adapted_by_hand(layer, x), {4, 6}, DType::kF64),
                       1e-13, 1e-13));
  layer.train(true);
  const Tensor trained = layer.forward(Variable(x)).data();
  EXPECT_FALSE(allclose(trained, evaluated, 1e-6, 1e-6));
  // Training mode with dropout = the base output + the adapter's term on a dropped input: the
  // difference from the base lies in the column space of B (rank 4 < 6 outputs), so projecting
  // it off B's columns leaves nothing.
  const std::vector<double> y = trained.to_double_vector(), base = plain.to_double_vector();
  const std::vector<double> b = layer.lora_b().data().to_double_vector();
  // Orthonormal basis of B's columns (Gram-Schmidt), then the residual of each row's delta.
  std::vector<std::vector<double>> basis;
  for (int64_t j = 0; j < 4; ++j) {
    std::vector<double> v(6);
    for (int64_t o = 0; o < 6; ++o) v[o] = b[o * 4 + j];
    for (const auto& u : basis) {
      double dot = 0;
      for (int64_t o = 0; o < 6; ++o) dot += u[o] * v[o];
      for (int64_t o = 0; o < 6; ++o) v[o] -= dot * u[o];
    }
    double norm = 0;
    for (double e : v) norm += e * e;
    for (double& e : v) e /= std::sqrt(norm);
    basis.push_back(v);
  }
  for (int64_t t = 0; t < 4; ++t) {
    std::vector<double> delta(6);
    for (int64_t o = 0; o < 6; ++o) delta[o] = y[t * 6 + o] - base[t * 6 + o];
    for (const auto& u : basis) {
      double dot = 0;
      for (int64_t o = 0; o < 6; ++o) dot += u[o] * delta[o];
      for (int64_t o = 0; o < 6; ++o) delta[o] -= dot * u[o];
    }
    for (double e : delta) EXPECT_NEAR(e, 0.0, 1e-12);
  }
}

TEST(LoraLinear, SharedInputProjectionsAddEachLayersOwnAdapter) {
  Generator gen(11);
  Linear q(LinearOptions{6, 6, true, DType::kF64}, gen);
  Linear k(LinearOptions{6, 4, true, DType::kF64}, gen);
  Linear v(LinearOptions{6, 5, true, DType::kF64}, gen);
  q.add_lora(lora(2, 4.0), gen, nullptr);
  v.add_lora(lora(3, 1.5), gen, nullptr);
  randomize_b(q, gen);
  randomize_b(v, gen);
  const Tensor x_data = randn({2, 3, 6}, gen, 0, 1, DType::kF64);
  const std::vector<Tensor> weights = {randn({2, 3, 6}, gen, 0, 1, DType::kF64),
                                       randn({2, 3, 4}, gen, 0, 1, DType::kF64),
                                       randn({2, 3, 5}, gen, 0, 1, DType::kF64)};
  auto run = [&](bool shared) {
    for (Linear* l : {&q, &k, &v}) l->zero_grad();
    Variable x(x_data.clone(), true);
    const std::vector<Variable> ys =
        shared ? forward_shared_input({&q, &k, &v}, x)
               : std::vector<Variable>{q.forward(x), k.forward(x), v.forward(x)};
    Variable loss = sum(ys[0] * Variable(weights[0]));
    for (size_t i = 1; i < ys.size(); ++i) loss = loss + sum(ys[i] * Variable(weights[i]));
    loss.backward();
    std::vector<Tensor> out = {x.grad(),          q.lora_a().grad(), q.lora_b().grad(),
                               v.lora_a().grad(), v.lora_b().grad(), k.weight().grad()};
    for (const Variable& y : ys) out.push_back(y.data().contiguous());
    return out;
  };
  const std::vector<Tensor> separate = run(false), shared = run(true);
  for (size_t i = 0; i < separate.size(); ++i) {
    EXPECT_TRUE(allclose(shared[i], separate[i], 1e-12, 1e-12)) << "tensor " << i;
  }
  // And the values are the hand-written ones.
  EXPECT_TRUE(allclose(shared[6], tensor_from(adapted_by_hand(q, x_data), {2, 3, 6}, DType::kF64),
                       1e-12, 1e-12));
}

// A feed-forward with adapters computes what the same feed-forward without them computes once
// each adapted weight is replaced by W + (α/r)·BA — for every activation, with and without
// biases — and its gradients agree with central differences.
TEST(LoraFeedForward, EqualsTheFeedForwardWithMergedWeights) {
  for (const Activation act :
       {Activation::kGelu, Activation::kRelu, Activation::kSwiglu, Activation::kGeglu}) {
    for (const bool bias : {true, false}) {
      FeedForwardOptions o;
      o.dim = 6;
      o.hidden_dim = 10;
      o.activation = act;
      o.bias = bias;
      o.dtype = DType::kF64;
      Generator gen(13);
      FeedForward adapted(o, gen, nullptr);
      Generator same(13);
      FeedForward merged(o, same, nullptr);
      const std::vector<std::string> targets =
          (act == Activation::kSwiglu || act == Activation::kGeglu)
              ? std::vector<std::string>{"gate_proj", "up_proj", "down_proj"}
              : std::vector<std::string>{"fc1", "fc2"};
      const std::vector<std::string> added =
          add_lora_adapters(adapted, targets, lora(2, 3.0), gen, nullptr);
      EXPECT_EQ(added.size(), targets.size());
      for (auto& [name, module] : adapted.named_modules()) {
        if (auto* layer = dynamic_cast<Linear*>(module)) randomize_b(*layer, gen);
      }
      StateDict state = adapted.state_dict();
      EXPECT_EQ(merge_lora_adapters(state, 1.5).size(), targets.size());
      merged.load_state_dict(state, /*strict=*/true);
      const Tensor x = randn({2, 4, 6}, gen, 0, 1, DType::kF64);
      EXPECT_TRUE(allclose(adapted.forward(Variable(x)).data(), merged.forward(Variable(x)).data(),
                           1e-12, 1e-12))
          << static_cast<int>(act) << " bias " << bias;
      std::vector<Variable> leaves;
      for (const auto& [name, p] : adapted.named_parameters()) leaves.push_back(p);
      EXPECT_TRUE(
          rota::testing::gradcheck_variables([&] { return adapted.forward(Variable(x)); }, leaves))
          << static_cast<int>(act) << " bias " << bias;
    }
  }
}

TEST(LoraMerge, FoldsEachAdapterIntoItsWeightAndKeepsTheOrder) {
  StateDict state;
  state.insert("a.weight", tensor_from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kF32));
  state.insert("a.lora_a", tensor_from({1, 0, -1}, {1, 3}, DType::kF32));
  state.insert("a.lora_b", tensor_from({2, -3}, {2, 1}, DType::kF32));
  state.insert("a.bias", tensor_from({7, 8}, {2}, DType::kF32));
  state.insert("b.weight", tensor_from({9}, {1, 1}, DType::kF32));
  EXPECT_TRUE(has_lora_adapters(state));
  EXPECT_EQ(merge_lora_adapters(state, 0.5), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(has_lora_adapters(state));
  std::vector<std::string> names;
  for (const auto& [name, t] : state) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.weight", "a.bias", "b.weight"}));
  // W + 0.5 · [2; −3] · [1 0 −1] = [[1+1, 2, 3−1], [4−1.5, 5, 6+1.5]].
  EXPECT_EQ(state.at("a.weight").to_double_vector(), (std::vector<double>{2, 2, 2, 2.5, 5, 7.5}));
  EXPECT_EQ(state.at("a.weight").dtype(), DType::kF32);
  StateDict none;
  none.insert("w.weight", tensor_from({1}, {1, 1}, DType::kF32));
  EXPECT_TRUE(merge_lora_adapters(none, 2.0).empty());
}

TEST(LoraMerge, RefusesUnpairedAdaptersMissingWeightsAndShapesThatDoNotChain) {
  StateDict lone;
  lone.insert("a.weight", tensor_from({1, 2}, {1, 2}, DType::kF32));
  lone.insert("a.lora_a", tensor_from({1, 2}, {1, 2}, DType::kF32));
  expect_error([&] { merge_lora_adapters(lone, 1.0); }, {"a.lora_a", "a.lora_b"});
  StateDict no_weight;
  no_weight.insert("a.lora_a", tensor_from({1, 2}, {1, 2}, DType::kF32));
  no_weight.insert("a.lora_b", tensor_from({1}, {1, 1}, DType::kF32));
  expect_error([&] { merge_lora_adapters(no_weight, 1.0); }, "a.weight");
  StateDict bad;
  bad.insert("a.weight", tensor_from({1, 2, 3, 4}, {2, 2}, DType::kF32));
  bad.insert("a.lora_a", tensor_from({1, 2, 3}, {1, 3}, DType::kF32));
  bad.insert("a.lora_b", tensor_from({1, 2}, {2, 1}, DType::kF32));
  expect_error([&] { merge_lora_adapters(bad, 1.0); }, {"a.weight", "[2,2]", "chain"});
}

// Two blocks with attention-like projections, a feed-forward and a norm-less plain module.
class TwoBlocks : public Module {
 public:
  explicit TwoBlocks(Generator& gen) {
    for (int i = 0; i < 2; ++i) {
      blocks_.push_back(
          register_module("block" + std::to_string(i), std::make_shared<Holder>(gen)));
    }
  }
  struct Holder : Module {
    explicit Holder(Generator& gen) {
      q_proj = register_module("q_proj", std::make_shared<Linear>(LinearOptions{4, 4}, gen));
      out_proj = register_module("out_proj", std::make_shared<Linear>(LinearOptions{4, 4}, gen));
      inner = register_module("inner", std::make_shared<Module>());
    }
    std::shared_ptr<Linear> q_proj, out_proj;
    std::shared_ptr<Module> inner;
  };
  std::vector<std::shared_ptr<Holder>> blocks_;
};

TEST(LoraTargets, SelectByWholeNameOrDottedSuffix) {
  EXPECT_TRUE(lora_target_matches("encoder.blocks.0.attn.q_proj", "q_proj"));
  EXPECT_TRUE(lora_target_matches("encoder.blocks.0.attn.q_proj", "attn.q_proj"));
  EXPECT_TRUE(lora_target_matches("q_proj", "q_proj"));
  EXPECT_FALSE(lora_target_matches("encoder.blocks.0.attn.xq_proj", "q_proj"));
  EXPECT_FALSE(lora_target_matches("encoder.blocks.0.attn.q_proj.inner", "q_proj"));
  EXPECT_FALSE(lora_target_matches("encoder.blocks.0.attn.q_proj", "blocks.0"));
  EXPECT_FALSE(lora_target_matches("q_proj", ""));

  Generator gen(17);
  TwoBlocks model(gen);
  EXPECT_EQ(add_lora_adapters(model, {"q_proj", "block1.out_proj"}, lora(2, 2.0), gen, nullptr),
            (std::vector<std::string>{"block0.q_proj", "block1.q_proj", "block1.out_proj"}));
  EXPECT_FALSE(model.blocks_[0]->out_proj->has_lora());
  EXPECT_TRUE(model.blocks_[1]->out_proj->has_lora());
}

TEST(LoraTargets, RefusesTargetsThatSelectNothingOrNoLinearAndBadOptions) {
  Generator gen(19);
  TwoBlocks model(gen);
  expect_error([&] { add_lora_adapters(model, {"v_proj"}, lora(2, 2.0), gen, nullptr); },
               {"'v_proj'", "selects no layer"});
  expect_error([&] { add_lora_adapters(model, {"inner"}, lora(2, 2.0), gen, nullptr); },
               {"'inner'", "block0.inner", "not a linear layer"});
  expect_error(
      [&] {
        add_lora_adapters(model, {"out_proj"}, lora(2, 2.0), gen, nullptr, {"block1.out_proj"});
      },
      {"'out_proj'", "block1.out_proj", "cannot take an adapter"});
  expect_error([&] { add_lora_adapters(model, {}, lora(2, 2.0), gen, nullptr); }, "no target");
  // A refused call adds nothing.
  EXPECT_FALSE(model.blocks_[0]->out_proj->has_lora());
  Linear layer(LinearOptions{4, 3}, gen);
  expect_error([&] { layer.add_lora(lora(0, 1.0), gen, nullptr); }, {"rank 0", "[1, 3]"});
  expect_error([&] { layer.add_lora(lora(4, 1.0), gen, nullptr); }, {"rank 4", "[1, 3]"});
  expect_error([&] { layer.add_lora(lora(2, 0.0), gen, nullptr); }, "alpha");
  expect_error([&] { layer.add_lora(lora(2, NAN), gen, nullptr); }, "alpha");
  expect_error([&] { layer.add_lora(lora(2, 1.0, 1.0), gen, nullptr); }, "dropout");
  expect_error([&] { layer.add_lora(lora(2, 1.0, 0.1), gen, nullptr); }, "dropout generator");
  layer.add_lora(lora(3, 1.0), gen, nullptr);
  expect_error([&] { layer.add_lora(lora(3, 1.0), gen, nullptr); }, "already");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn
