// Softmax attention op: f64 gradcheck of q, k, v, bias and equality with the composed form.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/indexing.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"
#include "framework/autograd/ops/softmax_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::SoftmaxAttentionMasks;
using testing::allclose;
using testing::gradcheck;

struct Geometry {
  std::string name;
  int64_t b, h, nq, nk, d, dv;
  bool causal;
  int64_t off;
  Shape bias_shape;  // empty: no bias
  bool key_padding;
  bool visibility;
  int64_t window = 0;  // sliding window W (0: none)
};

// Padding / visibility chosen so that every query row keeps at least one visible key (the
// composed softmax would turn an all −inf row into NaN): key 0... is never padded and the
// visibility mask always shows the key at position off + i (clamped to the keys).
SoftmaxAttentionMasks masks_for(const Geometry& c) {
  SoftmaxAttentionMasks m;
  m.causal = c.causal;
  m.query_offset = c.off;
  m.window = c.window;
  if (c.key_padding) {
    std::vector<double> pad(c.b * c.nk, 1.0);
    for (int64_t b = 0; b < c.b; ++b)
      for (int64_t j = 1; j < c.nk; ++j) pad[b * c.nk + j] = (j * 7 + b * 3) % 4 != 0;
    m.key_padding_mask = tensor_from(pad, {c.b, c.nk}, DType::kI32);
  }
  if (c.visibility) {
    std::vector<double> vis(c.nq * c.nk, 0.0);
    for (int64_t i = 0; i < c.nq; ++i) {
      for (int64_t j = 0; j < c.nk; ++j) vis[i * c.nk + j] = (i * 5 + j * 3) % 3 != 0;
      vis[i * c.nk + std::clamp<int64_t>(c.off + i, 0, c.nk - 1)] = 1;
      vis[i * c.nk] = 1;
    }
    m.visibility_mask = tensor_from(vis, {c.nq, c.nk}, DType::kF32);
  }
  return m;
}

// [B, 1, Nq, Nk] with 1 where key j is hidden from query i in batch b (for masked_fill).
Tensor hidden_mask(const Geometry& c, const SoftmaxAttentionMasks& m) {
  std::vector<double> hidden(c.b * c.nq * c.nk, 0.0);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t i = 0; i < c.nq; ++i)
      for (int64_t j = 0; j < c.nk; ++j) {
        bool h = c.causal && j > c.off + i;
        h = h || (c.window > 0 && c.off + i - j >= c.window);  // the plain sliding-window rule
        if (m.key_padding_mask.defined()) h = h || m.key_padding_mask.at({b, j}) == 0;
        if (m.visibility_mask.defined()) h = h || m.visibility_mask.at({i, j}) == 0;
        hidden[(b * c.nq + i) * c.nk + j] = h;
      }
  return tensor_from(hidden, {c.b, 1, c.nq, c.nk}, DType::kF32);
}

Variable composed(const Variable& q, const Variable& k, const Variable& v, const Variable& bias,
                  double scale, const Tensor& hidden, const Tensor& dropout_mask = Tensor()) {
  Variable logits = matmul(q, k, false, true) * scale;
  if (bias.defined()) logits = logits + bias;
  logits = masked_fill(logits, hidden, -std::numeric_limits<double>::infinity());
  Variable p = softmax(logits, -1);
  if (dropout_mask.defined()) p = p * Variable(dropout_mask);
  return matmul(p, v);
}

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> all = {
      {"SelfFull", 2, 2, 5, 5, 3, 4, false, 0, {}, false, false},
      {"SelfCausalBiasPerHead", 1, 3, 6, 6, 4, 3, true, 0, {1, 3, 6, 6}, false, false},
      {"CrossEndAlignedCausal", 2, 2, 3, 7, 3, 2, true, 4, {3, 7}, true, false},
      {"CrossStartAlignedPadding", 2, 1, 4, 6, 2, 3, false, 0, {2, 1, 1, 6}, true, false},
      {"CrossQueriesLongerVisibility", 1, 2, 7, 4, 3, 3, false, 0, {1, 2, 7, 4}, false, true},
      {"CausalOffsetAcrossTiles", 1, 1, 5, 70, 2, 2, true, 65, {1, 1, 5, 70}, true, false},
      // Sliding windows: within one tile, across key tiles (64) and query blocks (32) so that
      // skipped tiles are exercised in the forward and the backward, and with an offset.
      {"CausalWindow3", 2, 2, 9, 9, 3, 2, true, 0, {1, 2, 9, 9}, false, false, 3},
      {"CausalWindowAcrossTiles", 1, 1, 100, 100, 2, 2, true, 0, {}, false, false, 20},
      {"CausalWindowOffsetAcrossTiles", 1, 1, 5, 70, 2, 2, true, 65, {1, 1, 5, 70}, false, true, 7},
      {"CausalWindowOne", 1, 2, 6, 6, 2, 3, true, 0, {}, false, false, 1},
  };
  return all;
}

class SoftmaxAttentionOp : public ::testing::TestWithParam<Geometry> {};

TEST_P(SoftmaxAttentionOp, GradcheckQKVBias) {
  const Geometry& c = GetParam();
  Generator gen(c.nq * 13 + c.nk);
  const SoftmaxAttentionMasks masks = masks_for(c);
  std::vector<Tensor> inputs = {randn({c.b, c.h, c.nq, c.d}, gen, 0, 1, DType::kF64),
                                randn({c.b, c.h, c.nk, c.d}, gen, 0, 1, DType::kF64),
                                randn({c.b, c.h, c.nk, c.dv}, gen, 0, 1, DType::kF64)};
  if (!c.bias_shape.empty()) inputs.push_back(randn(c.bias_shape, gen, 0, 1, DType::kF64));
  const double scale = 0.7;
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        return softmax_attention(in[0], in[1], in[2], in.size() > 3 ? in[3] : Variable(), scale,
                                 masks);
      },
      inputs));
}

TEST_P(SoftmaxAttentionOp, EqualsComposedFormForwardAndBackward) {
  const Geometry& c = GetParam();
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const double tol = dtype == DType::kF64 ? 1e-12 : 2e-5;
    Generator gen(c.nq * 3 + c.nk);
    const SoftmaxAttentionMasks masks = masks_for(c);
    const Tensor hidden = hidden_mask(c, masks);
    const Tensor q = randn({c.b, c.h, c.nq, c.d}, gen, 0, 1, dtype);
    const Tensor k = randn({c.b, c.h, c.nk, c.d}, gen, 0, 1, dtype);
    const Tensor v = randn({c.b, c.h, c.nk, c.dv}, gen, 0, 1, dtype);
    const Tensor bias = c.bias_shape.empty() ? Tensor() : randn(c.bias_shape, gen, 0, 1, dtype);
    const Tensor g = randn({c.b, c.h, c.nq, c.dv}, gen, 0, 1, dtype);
    auto run = [&](bool fused) {
      Variable qv(q, true), kv(k, true), vv(v, true);
      Variable bv = bias.defined() ? Variable(bias, true) : Variable();
      const Variable out = fused ? softmax_attention(qv, kv, vv, bv, 0.5, masks)
                                 : composed(qv, kv, vv, bv, 0.5, hidden);
      out.backward(g);
      std::vector<Tensor> r = {out.data(), qv.grad(), kv.grad(), vv.grad()};
      if (bv.defined()) r.push_back(bv.grad());
      return r;
    };
    const auto fused = run(true), reference = run(false);
    const char* names[] = {"out", "dq", "dk", "dv", "dbias"};
    for (size_t i = 0; i < reference.size(); ++i)
      EXPECT_TRUE(allclose(fused[i], reference[i], tol, tol))
          << names[i] << " " << dtype_name(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, SoftmaxAttentionOp, ::testing::ValuesIn(geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& info) {
                           return info.param.name;
                         });

TEST(SoftmaxAttentionOpExtra, NonContiguousInputs) {
  Generator gen(3);
  // q, k, v as head-split views of [B, N, H, D] tensors, as a layer produces them.
  const Tensor q = randn({2, 5, 2, 3}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor k = randn({2, 6, 2, 3}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor v = randn({2, 6, 2, 4}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor bias = randn({6, 5}, gen, 0, 1, DType::kF64).transpose(0, 1);  // [Nq, Nk] view
  SoftmaxAttentionMasks masks;
  masks.causal = true;
  masks.query_offset = 1;
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        return softmax_attention(in[0], in[1], in[2], in[3], 0.6, masks);
      },
      {q, k, v, bias}));
}

TEST(SoftmaxAttentionOpExtra, RelativePositionBiasGradcheck) {
  // A Toeplitz bias from a [H, Nq+Nk−1] table through the view op; cross, end-aligned.
  Generator gen(4);
  const int64_t nq = 4, nk = 6;
  SoftmaxAttentionMasks masks;
  masks.causal = true;
  masks.query_offset = 2;
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        return softmax_attention(in[0], in[1], in[2], relative_position_bias(in[3], nq, nk), 0.5,
                                 masks);
      },
      {randn({2, 3, nq, 3}, gen, 0, 1, DType::kF64), randn({2, 3, nk, 3}, gen, 0, 1, DType::kF64),
       randn({2, 3, nk, 2}, gen, 0, 1, DType::kF64),
       randn({3, nq + nk - 1}, gen, 0, 1, DType::kF64)}));
}

TEST(SoftmaxAttentionOpExtra, RelativeOpGradcheckAndEqualsViewPath) {
  Generator gen(12);
  const int64_t nq = 5, nk = 7;
  for (const int64_t rows : {3, 1}) {  // per-head table, one table for all heads
    SoftmaxAttentionMasks masks;
    masks.causal = rows == 3;
    masks.query_offset = 2;
    const std::vector<Tensor> inputs = {randn({2, 3, nq, 3}, gen, 0, 1, DType::kF64),
                                        randn({2, 3, nk, 3}, gen, 0, 1, DType::kF64),
                                        randn({2, 3, nk, 2}, gen, 0, 1, DType::kF64),
                                        randn({rows, nq + nk - 1}, gen, 0, 1, DType::kF64)};
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Variable>& in) {
          return softmax_attention_relative(in[0], in[1], in[2], in[3], 0.5, masks);
        },
        inputs));
    // The same gradients as the generic op on the Toeplitz view.
    auto run = [&](bool relative) {
      std::vector<Variable> v;
      for (const Tensor& t : inputs) v.emplace_back(t, true);
      const Variable out =
          relative ? softmax_attention_relative(v[0], v[1], v[2], v[3], 0.5, masks)
                   : softmax_attention(v[0], v[1], v[2], relative_position_bias(v[3], nq, nk), 0.5,
                                       masks);
      out.backward(ones(out.shape(), DType::kF64));
      return std::vector<Tensor>{out.data(), v[0].grad(), v[1].grad(), v[2].grad(), v[3].grad()};
    };
    const auto a = run(true), b = run(false);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(allclose(a[i], b[i], 1e-12, 1e-12)) << i;
  }
}

TEST(SoftmaxAttentionOpExtra, DropoutGradcheckAndComposedForm) {
  const Geometry c{"", 2, 2, 5, 7, 3, 3, true, 2, {1, 2, 5, 7}, true, false};
  const SoftmaxAttentionMasks masks = masks_for(c);
  Generator gen(8);
  const Tensor q = randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor bias = randn({1, 2, 5, 7}, gen, 0, 1, DType::kF64);
  const double p = 0.3;
  // The same generator state gives the same seed, so every evaluation uses one mask.
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        Generator g(55);
        return softmax_attention(in[0], in[1], in[2], in[3], 0.5, masks, p, &g);
      },
      {q, k, v, bias}));
  // Composed with the kernel's own mask: the seed is the generator's first draw.
  const uint64_t seed = Generator(55).next_u64();
  const Tensor mask = backend::softmax_attention_dropout_mask(2, 2, 5, 7, p, seed, DType::kF64);
  Generator g55(55);
  Variable qv(q, true), kv(k, true), vv(v, true), bv(bias, true);
  const Variable fused = softmax_attention(qv, kv, vv, bv, 0.5, masks, p, &g55);
  Variable qr(q, true), kr(k, true), vr(v, true), br(bias, true);
  const Variable ref = composed(qr, kr, vr, br, 0.5, hidden_mask(c, masks), mask);
  EXPECT_TRUE(allclose(fused.data(), ref.data(), 1e-12, 1e-12));
  const Tensor up = randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64);
  fused.backward(up);
  ref.backward(up);
  EXPECT_TRUE(allclose(qv.grad(), qr.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(kv.grad(), kr.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(vv.grad(), vr.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(bv.grad(), br.grad(), 1e-12, 1e-12));
}

TEST(SoftmaxAttentionOpExtra, GeneratorUseAndSavedState) {
  Generator gen(9);
  const Variable q(randn({1, 2, 4, 3}, gen)), k(randn({1, 2, 4, 3}, gen)),
      v(randn({1, 2, 4, 3}, gen));
  SoftmaxAttentionMasks masks;
  // p = 0 leaves the generator untouched; p > 0 draws exactly one seed.
  Generator a(1), b(1);
  softmax_attention(q, k, v, Variable(), 1.0, masks, 0.0, &a);
  EXPECT_EQ(a.state(), b.state());
  const Variable o1 = softmax_attention(q, k, v, Variable(), 1.0, masks, 0.5, &a);
  b.next_u64();
  EXPECT_EQ(a.state(), b.state());
  Generator c(1);
  const Variable o2 = softmax_attention(q, k, v, Variable(), 1.0, masks, 0.5, &c);
  EXPECT_TRUE(allclose(o1.data(), o2.data(), 0, 0));
  // Nothing requires grad: the result is a plain leaf (no node, nothing saved).
  EXPECT_TRUE(o1.is_leaf());
  EXPECT_THROW(softmax_attention(q, k, v, Variable(), 1.0, masks, 0.5, nullptr), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
