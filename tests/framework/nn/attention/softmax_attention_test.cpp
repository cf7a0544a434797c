// SoftmaxAttention, ALiBi and T5: naive-loop equality, hand-derived values, gradchecks.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/shape.h"
#include "framework/nn/attention/softmax_attention.h"
#include "framework/nn/position/alibi.h"
#include "framework/nn/position/t5_bias.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::gradcheck_variables;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Geometry {
  std::string name;
  int64_t b, h, nq, nk, d;
  bool causal;
  int64_t off;
  bool key_padding;
};

// Random padding (never key 0, so every row of a causal block with off >= 0 sees a key).
Tensor padding_for(const Geometry& g) {
  if (!g.key_padding) return Tensor();
  std::vector<double> m(g.b * g.nk, 1.0);
  for (int64_t b = 0; b < g.b; ++b)
    for (int64_t j = 1; j < g.nk; ++j) m[b * g.nk + j] = (j * 5 + b) % 4 != 1;
  return tensor_from(m, {g.b, g.nk}, DType::kF32);
}

nn::AttentionCall call_for(const Geometry& g, double scale) {
  nn::AttentionCall call;
  call.scale = scale;
  call.causal = g.causal;
  call.query_offset = g.off;
  call.key_padding_mask = padding_for(g);
  return call;
}

// The logit formula ℓ_ij = s·q_i·k_j + b(h, t_ij), t_ij = j − i − off, hidden entries −inf,
// softmax over j, o_i = Σ_j p_ij v_j — one (b, h, i, j) at a time, in double.
Tensor naive_attention(const Geometry& g, const Tensor& q, const Tensor& k, const Tensor& v,
                       double scale, const std::function<double(int64_t h, int64_t t)>& bias) {
  const auto qv = q.to_double_vector(), kv = k.to_double_vector(), vv = v.to_double_vector();
  const Tensor pad_t = padding_for(g);
  const std::vector<double> pad =
      pad_t.defined() ? pad_t.to_double_vector() : std::vector<double>();
  std::vector<double> out(g.b * g.h * g.nq * g.d, 0.0);
  for (int64_t b = 0; b < g.b; ++b)
    for (int64_t h = 0; h < g.h; ++h) {
      const int64_t s = b * g.h + h;
      for (int64_t i = 0; i < g.nq; ++i) {
        std::vector<double> l(g.nk, kNegInf);
        double mx = kNegInf;
        for (int64_t j = 0; j < g.nk; ++j) {
          const int64_t t = j - i - g.off;
          if ((g.causal && t > 0) || (!pad.empty() && pad[b * g.nk + j] == 0)) continue;
          double dot = 0;
          for (int64_t x = 0; x < g.d; ++x)
            dot += qv[(s * g.nq + i) * g.d + x] * kv[(s * g.nk + j) * g.d + x];
          l[j] = scale * dot + bias(h, t);
          mx = std::max(mx, l[j]);
        }
        double z = 0;
        for (double x : l) z += std::exp(x - mx);
        for (int64_t j = 0; j < g.nk; ++j)
          for (int64_t x = 0; x < g.d; ++x)
            out[(s * g.nq + i) * g.d + x] += std::exp(l[j] - mx) / z * vv[(s * g.nk + j) * g.d + x];
      }
    }
  return tensor_from(out, {g.b, g.h, g.nq, g.d}, DType::kF64);
}

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> all = {
      {"SelfCausal", 2, 3, 9, 9, 4, true, 0, false},
      {"SelfFullPadded", 2, 3, 9, 9, 4, false, 0, true},
      {"CrossEndAlignedCausal", 1, 3, 5, 23, 4, true, 18, false},
      {"CrossStartAlignedFull", 2, 2, 5, 23, 3, false, 0, true},
      {"QueriesLongerFull", 1, 2, 17, 6, 3, false, 0, false},
      {"LongBeyondMaxDistanceCausal", 1, 2, 40, 173, 4, true, 133, false},
      {"LongBeyondMaxDistanceFull", 1, 2, 37, 150, 4, false, 5, false},
  };
  return all;
}

// ---- ALiBi ----

TEST(Alibi, SlopesForEightAndTwelveHeadsAndOtherCounts) {
  // H = 8 (power of two): m_h = 2^(−8(h+1)/8) = 2^−(h+1).
  const auto s8 = nn::alibi_slopes(8);
  ASSERT_EQ(s8.size(), 8u);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s8[h], std::ldexp(1.0, -(h + 1)));
  // H = 12: the 8-head slopes, then positions 0, 2, 4, 6 of the 16-head list 2^−(k+1)/2,
  // i.e. 2^−0.5, 2^−1.5, 2^−2.5, 2^−3.5 (appended, not interleaved).
  const auto s12 = nn::alibi_slopes(12);
  ASSERT_EQ(s12.size(), 12u);
  for (int h = 0; h < 8; ++h) EXPECT_EQ(s12[h], std::ldexp(1.0, -(h + 1)));
  for (int h = 0; h < 4; ++h) EXPECT_NEAR(s12[8 + h], std::pow(2.0, -0.5 - h), 1e-16);
  // H = 3 → [1/16, 1/256, 1/4]; H = 6 → [1/4, 1/16, 1/64, 1/256, 1/2, 1/8] (encodings.md §7).
  EXPECT_EQ(nn::alibi_slopes(3), (std::vector<double>{1.0 / 16, 1.0 / 256, 1.0 / 4}));
  EXPECT_EQ(nn::alibi_slopes(6),
            (std::vector<double>{1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 2, 1.0 / 8}));
  EXPECT_EQ(nn::alibi_slopes(1), (std::vector<double>{1.0 / 256}));
  EXPECT_THROW(nn::alibi_slopes(0), Error);
}

class AlibiForms : public ::testing::TestWithParam<Geometry> {};

TEST_P(AlibiForms, EfficientFormEqualsNaiveLoop) {
  const Geometry& g = GetParam();
  Generator gen(g.nq * 7 + g.nk);
  const Tensor q = randn({g.b, g.h, g.nq, g.d}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({g.b, g.h, g.nk, g.d}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({g.b, g.h, g.nk, g.d}, gen, 0, 1, DType::kF64);
  nn::Alibi alibi(g.h);
  const auto m = nn::alibi_slopes(g.h);
  const double scale = 1.0 / std::sqrt(static_cast<double>(g.d));
  const Tensor expected = naive_attention(
      g, q, k, v, scale, [&](int64_t h, int64_t t) { return -m[h] * std::abs(double(t)); });
  const Variable out = alibi.attend(Variable(q), Variable(k), Variable(v), call_for(g, scale));
  EXPECT_TRUE(allclose(out.data(), expected, 1e-12, 1e-12));
  // f32 through the same path.
  const Variable out32 = alibi.attend(Variable(q.to(DType::kF32)), Variable(k.to(DType::kF32)),
                                      Variable(v.to(DType::kF32)), call_for(g, scale));
  EXPECT_TRUE(allclose(out32.data(), expected, 1e-4, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Geometries, AlibiForms, ::testing::ValuesIn(geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& info) {
                           return info.param.name;
                         });

TEST(Alibi, BiasIsSymmetricNonPositiveAndZeroOnTheQueryPosition) {
  nn::Alibi alibi(3);
  const Tensor bias = alibi.bias(4, 9, 5, DType::kF64).contiguous();  // query i at key 5 + i
  const auto m = nn::alibi_slopes(3);
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 9; ++j) {
        EXPECT_LE(bias.at({0, h, i, j}), 0.0);
        EXPECT_DOUBLE_EQ(bias.at({0, h, i, j}), -m[h] * std::abs(double(j - i - 5)));
      }
}

// ---- T5 ----

TEST(T5Bias, BucketSpotChecksDerivedByHand) {
  // Bidirectional, 32 buckets, max distance 128: n' = 16, E = 8; for 8 <= n < 128 the bucket is
  // 8 + ⌊ln(n/8)/ln(16)·8⌋ = 8 + ⌊2·log2(n/8)⌋; the future (t > 0) adds 16.
  auto bi = [](int64_t t) { return nn::t5_relative_bucket(t, true, 32, 128); };
  EXPECT_EQ(bi(0), 0);
  EXPECT_EQ(bi(-1), 1);
  EXPECT_EQ(bi(-7), 7);
  EXPECT_EQ(bi(-8), 8);     // 2·log2(1) = 0
  EXPECT_EQ(bi(-11), 8);    // 2·log2(1.375) = 0.92
  EXPECT_EQ(bi(-12), 9);    // 2·log2(1.5) = 1.17
  EXPECT_EQ(bi(-16), 10);   // exactly 2: truncation must not give 9
  EXPECT_EQ(bi(-22), 10);   // 2·log2(2.75) = 2.92
  EXPECT_EQ(bi(-23), 11);   // 2·log2(2.875) = 3.05
  EXPECT_EQ(bi(-32), 12);   // exactly 4
  EXPECT_EQ(bi(-64), 14);   // exactly 6
  EXPECT_EQ(bi(-127), 15);  // 2·log2(15.875) = 7.98
  EXPECT_EQ(bi(-128), 15);  // 8 → clamped to n' − 1 = 15
  EXPECT_EQ(bi(-5000), 15);
  EXPECT_EQ(bi(1), 17);
  EXPECT_EQ(bi(7), 23);
  EXPECT_EQ(bi(12), 25);
  EXPECT_EQ(bi(128), 31);
  EXPECT_EQ(bi(5000), 31);
  // Unidirectional, 32 / 128: n' = 32, E = 16, n = max(−t, 0); 16 + ⌊16·log2(n/16)/3⌋.
  auto uni = [](int64_t t) { return nn::t5_relative_bucket(t, false, 32, 128); };
  EXPECT_EQ(uni(5), 0);  // the future shares bucket 0
  EXPECT_EQ(uni(0), 0);
  EXPECT_EQ(uni(-15), 15);
  EXPECT_EQ(uni(-16), 16);
  EXPECT_EQ(uni(-20), 17);   // 16·0.3219/3 = 1.72
  EXPECT_EQ(uni(-32), 21);   // 16/3 = 5.33
  EXPECT_EQ(uni(-64), 26);   // 32/3 = 10.67
  EXPECT_EQ(uni(-127), 31);  // 16·2.9887/3 = 15.94
  EXPECT_EQ(uni(-128), 31);  // 16 → clamped
  // Bidirectional, 8 buckets, max distance 16: n' = 4, E = 2; 2 + ⌊2·log2(n/2)/3⌋, clamp 3.
  auto small = [](int64_t t) { return nn::t5_relative_bucket(t, true, 8, 16); };
  EXPECT_EQ(small(-1), 1);
  EXPECT_EQ(small(-5), 2);  // 2·1.32/3 = 0.88
  EXPECT_EQ(small(-6), 3);  // 2·1.58/3 = 1.06
  EXPECT_EQ(small(-100), 3);
  EXPECT_EQ(small(1), 5);
  EXPECT_EQ(small(6), 7);
  EXPECT_THROW(nn::t5_relative_bucket(0, true, 2, 16), Error);
  EXPECT_THROW(nn::t5_relative_bucket(0, true, 32, 4), Error);
}

// The spec's bucket function written again, in double, for the naive loop.
int64_t bucket_in_double(int64_t t, bool bidirectional, int64_t nb, int64_t max_distance) {
  const int64_t np = bidirectional ? nb / 2 : nb;
  const int64_t base = bidirectional && t > 0 ? np : 0;
  const int64_t n = bidirectional ? std::llabs(t) : std::max<int64_t>(-t, 0);
  const int64_t e = np / 2;
  if (n < e) return base + n;
  const double large =
      e + std::floor(std::log(double(n) / e) / std::log(double(max_distance) / e) * double(np - e));
  return base + std::min<int64_t>(np - 1, static_cast<int64_t>(large));
}

class T5Forms : public ::testing::TestWithParam<Geometry> {};

TEST_P(T5Forms, EfficientFormEqualsNaiveLoop) {
  const Geometry& g = GetParam();
  // Default buckets (32, 128) and small ones (8, 16) so that lengths exceed the max distance.
  for (const auto& [nb, md] : {std::pair<int64_t, int64_t>{32, 128}, {8, 16}}) {
    Generator gen(g.nq * 5 + g.nk + nb);
    nn::T5BiasOptions o;
    o.heads = g.h;
    o.num_buckets = nb;
    o.max_distance = md;
    o.bidirectional = !g.causal;
    o.init_std = 1.0;
    o.dtype = DType::kF64;
    nn::T5RelativeBias t5(o, gen);
    const Tensor q = randn({g.b, g.h, g.nq, g.d}, gen, 0, 1, DType::kF64);
    const Tensor k = randn({g.b, g.h, g.nk, g.d}, gen, 0, 1, DType::kF64);
    const Tensor v = randn({g.b, g.h, g.nk, g.d}, gen, 0, 1, DType::kF64);
    const Tensor w = t5.weight().data();
    const double scale = 0.5;
    const Tensor expected = naive_attention(g, q, k, v, scale, [&](int64_t h, int64_t t) {
      return w.at({bucket_in_double(t, !g.causal, nb, md), h});
    });
    const Variable out = t5.attend(Variable(q), Variable(k), Variable(v), call_for(g, scale));
    EXPECT_TRUE(allclose(out.data(), expected, 1e-12, 1e-12)) << nb << "/" << md;
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, T5Forms, ::testing::ValuesIn(geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& info) {
                           return info.param.name;
                         });

TEST(T5Bias, GradcheckTableAndInputs) {
  for (bool causal : {true, false}) {
    Generator gen(causal ? 3 : 4);
    nn::T5BiasOptions o;
    o.heads = 2;
    o.num_buckets = 8;
    o.max_distance = 6;
    o.bidirectional = !causal;
    o.init_std = 1.0;
    o.dtype = DType::kF64;
    nn::T5RelativeBias t5(o, gen);
    const Geometry g{"", 2, 2, 5, 11, 3, causal, 6, !causal};
    Variable q(randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64), true);
    Variable k(randn({2, 2, 11, 3}, gen, 0, 1, DType::kF64), true);
    Variable v(randn({2, 2, 11, 3}, gen, 0, 1, DType::kF64), true);
    const nn::AttentionCall call = call_for(g, 0.7);
    EXPECT_TRUE(
        gradcheck_variables([&] { return t5.attend(q, k, v, call); }, {t5.weight(), q, k, v}))
        << (causal ? "causal" : "bidirectional");
  }
}

// ---- the layer ----

/// The encodings the layer tests run, by test name: "none", "rope" (adjacent pairs),
/// "rope_half", "alibi", "t5" (8 buckets, max distance 6).
nn::PositionEncoding encoding_named(const std::string& name) {
  if (name == "none") return nn::NoPosition{};
  if (name == "rope") return nn::RopePosition{};
  if (name == "rope_half") return nn::RopePosition{backend::LrpePairing::kHalf};
  if (name == "alibi") return nn::AlibiPosition{};
  if (name == "t5") return nn::T5Position{8, 6};
  throw Error("unknown test encoding '" + name + "'");
}

nn::SoftmaxAttentionOptions layer_options(const std::string& encoding, bool causal,
                                          DType dtype = DType::kF64) {
  nn::SoftmaxAttentionOptions o;
  o.dim = 8;
  o.heads = 2;
  o.causal = causal;
  o.position = encoding_named(encoding);
  o.dtype = dtype;
  return o;
}

std::vector<Variable> trainable(const nn::Module& m) {
  std::vector<Variable> out;
  for (const auto& [name, p] : m.named_parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

class LayerEncodings : public ::testing::TestWithParam<std::string> {};

TEST_P(LayerEncodings, GradcheckParametersAndInputs) {
  for (bool causal : {true, false}) {
    Generator gen(11);
    nn::SoftmaxAttentionOptions o = layer_options(GetParam(), causal);
    o.kv_dim = 6;  // cross-attention from a narrower memory
    nn::SoftmaxAttention layer(o, gen);
    Variable xq(randn({2, 3, 8}, gen, 0, 1, DType::kF64), true);
    Variable xkv(randn({2, 5, 6}, gen, 0, 1, DType::kF64), true);
    nn::SoftmaxAttentionInputs in;
    in.query_offset = 2;  // queries are the last 3 of 5 positions
    if (!causal) in.key_padding_mask = tensor_from({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 5});
    std::vector<Variable> leaves = trainable(layer);
    leaves.push_back(xq);
    leaves.push_back(xkv);
    EXPECT_TRUE(gradcheck_variables([&] { return layer.forward(xq, xkv, in); }, leaves))
        << GetParam() << (causal ? " causal" : " full");
  }
}

TEST_P(LayerEncodings, EndAlignedQueriesReproduceTheLastRowsOfSelfAttention) {
  // Running only the last m queries against all N keys with query_offset = N − m (a cache or
  // memory) gives exactly the last m rows of the full self-attention.
  for (bool causal : {true, false}) {
    Generator gen(5);
    nn::SoftmaxAttention layer(layer_options(GetParam(), causal), gen);
    const Tensor x = randn({2, 9, 8}, gen, 0, 1, DType::kF64);
    const Variable full = layer.forward(Variable(x));
    nn::SoftmaxAttentionInputs in;
    in.query_offset = 6;
    const Variable tail = layer.forward(Variable(x.slice(1, 6, 9)), Variable(x), in);
    EXPECT_TRUE(allclose(tail.data(), full.data().slice(1, 6, 9), 1e-12, 1e-12))
        << GetParam() << (causal ? " causal" : " full");
    EXPECT_EQ(layer.scale(), 0.5);  // 1/√D with D = 4
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, LayerEncodings,
                         ::testing::Values("none", "rope", "rope_half", "alibi", "t5"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(SoftmaxAttentionLayer, RopeMakesLogitsDependOnRelativePositionOnly) {
  // With RoPE (no other encoding), shifting the queries' offset and the keys together changes
  // nothing; here keys are fixed at 0.., so compare two blocks at the same relative placement:
  // queries 3..5 over keys 0..8 vs the full run's rows 3..5 (same t for every pair).
  Generator gen(8);
  nn::SoftmaxAttention layer(layer_options("rope", false), gen);
  const Tensor x = randn({1, 9, 8}, gen, 0, 1, DType::kF64);
  nn::SoftmaxAttentionInputs in;
  in.query_offset = 3;
  const Variable mid = layer.forward(Variable(x.slice(1, 3, 6)), Variable(x), in);
  const Variable full = layer.forward(Variable(x));
  EXPECT_TRUE(allclose(mid.data(), full.data().slice(1, 3, 6), 1e-12, 1e-12));
  // A wrong offset places the queries elsewhere and changes the result.
  in.query_offset = 0;
  const Variable wrong = layer.forward(Variable(x.slice(1, 3, 6)), Variable(x), in);
  EXPECT_FALSE(allclose(wrong.data(), full.data().slice(1, 3, 6), 1e-6, 1e-6));
}

TEST(SoftmaxAttentionLayer, DropoutIsReproducibleAndOnlyInTraining) {
  auto make = [](double dropout, uint64_t dropout_seed) {
    Generator gen(21);
    nn::SoftmaxAttentionOptions o = layer_options("alibi", true, DType::kF32);
    o.dropout = dropout;
    return std::make_shared<nn::SoftmaxAttention>(o, gen,
                                                  std::make_shared<Generator>(dropout_seed));
  };
  Generator gen(2);
  const Variable x(randn({2, 7, 8}, gen));
  const auto a = make(0.4, 99), b = make(0.4, 99), plain = make(0.0, 99);
  const Tensor ya = a->forward(x).data(), yb = b->forward(x).data();
  EXPECT_TRUE(allclose(ya, yb, 0, 0));  // same dropout stream, same masks
  EXPECT_FALSE(allclose(ya, plain->forward(x).data(), 1e-3, 1e-3));
  EXPECT_FALSE(allclose(ya, a->forward(x).data(), 1e-3, 1e-3));  // next call, next mask
  a->eval();
  EXPECT_TRUE(allclose(a->forward(x).data(), plain->forward(x).data(), 0, 0));
  Generator g(1);
  nn::SoftmaxAttentionOptions o = layer_options("none", true);
  o.dropout = 0.1;
  EXPECT_THROW(nn::SoftmaxAttention(o, g), Error);  // dropout without a dropout generator
}

TEST(SoftmaxAttentionLayer, CustomEncodingsPlugIn) {
  Generator g1(4), g2(4);
  nn::SoftmaxAttentionOptions o = layer_options("alibi", true);
  nn::SoftmaxAttention builtin(o, g1);
  o.custom_encoding = std::make_shared<nn::Alibi>(2);
  nn::SoftmaxAttention custom(o, g2);
  Generator gen(3);
  const Variable x(randn({2, 6, 8}, gen, 0, 1, DType::kF64));
  EXPECT_TRUE(allclose(custom.forward(x).data(), builtin.forward(x).data(), 0, 0));
  // Sharing one table between layers: SoftmaxPosition.CustomEncodingReplacesTheTypedOne.
}

TEST(SoftmaxAttentionLayer, ParametersAndShapeErrors) {
  Generator gen(1);
  nn::SoftmaxAttention t5(layer_options("t5", false), gen);
  std::vector<std::string> names;
  for (const auto& [name, p] : t5.named_parameters()) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"q_proj.weight", "q_proj.bias", "k_proj.weight",
                                      "k_proj.bias", "v_proj.weight", "v_proj.bias",
                                      "out_proj.weight", "out_proj.bias", "position.weight"}));
  EXPECT_THROW(t5.forward(Variable(zeros({2, 3, 7}, DType::kF64))), Error);
  EXPECT_THROW(
      t5.forward(Variable(zeros({2, 3, 8}, DType::kF64)), Variable(zeros({3, 4, 8}, DType::kF64))),
      Error);
  nn::SoftmaxAttentionOptions bad = layer_options("none", true);
  bad.heads = 3;
  EXPECT_THROW(nn::SoftmaxAttention(bad, gen), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
