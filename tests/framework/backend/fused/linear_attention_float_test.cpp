// The f32 linear attention kernels (the vector small_gemm build this CPU runs, or the one
// ROTA_MAX_CPU_ISA picks) against the f64 kernels on the same values, forward and backward.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using rota::testing::max_relative_error;
using rota::testing::random_qkv;

// Bound on ‖f32 − f64‖∞ / ‖f64‖∞: a wrong mask, block edge or decay power gives O(1), f32
// rounding of sums of ≤ a few thousand products stays near 1e-6.
constexpr double kTolerance = 2e-5;

struct FloatCase {
  int64_t b, h, n, f, d, chunk;
  bool decay;
};

std::string case_name(const FloatCase& c) {
  return "n" + std::to_string(c.n) + "_f" + std::to_string(c.f) + "_d" + std::to_string(c.d) +
         "_c" + std::to_string(c.chunk) + (c.decay ? "_decay" : "");
}

class CausalFloat : public ::testing::TestWithParam<FloatCase> {};

TEST_P(CausalFloat, ForwardAndBackwardMatchDouble) {
  const FloatCase c = GetParam();
  Generator gen(c.n * 7 + c.chunk);
  const auto [q, k, v] = random_qkv(gen, c.b, c.h, c.n, c.f, c.d);
  const Tensor g = randn({c.b, c.h, c.n, c.d}, gen, 0, 1, DType::kF64);
  Tensor decay64, decay32;
  if (c.decay) {
    std::vector<double> gammas;
    for (int64_t h = 0; h < c.h; ++h) gammas.push_back(0.9 + 0.05 * static_cast<double>(h));
    decay64 = tensor_from(gammas, {c.h}, DType::kF64);
    decay32 = decay64.to(DType::kF32);
  }
  // The f32 inputs are the f64 values rounded; the f64 reference uses those rounded values.
  const Tensor q32 = q.to(DType::kF32), k32 = k.to(DType::kF32), v32 = v.to(DType::kF32),
               g32 = g.to(DType::kF32);
  const Tensor q64 = q32.to(DType::kF64), k64 = k32.to(DType::kF64), v64 = v32.to(DType::kF64),
               g64 = g32.to(DType::kF64);
  const std::string isa = backend::vecmath::isa_name(backend::vecmath::best_isa());
  EXPECT_LE(
      max_relative_error(backend::causal_linear_attention_forward(q32, k32, v32, c.chunk, decay32),
                         backend::causal_linear_attention_forward(q64, k64, v64, c.chunk, decay64)),
      kTolerance)
      << isa;
  const auto got = backend::causal_linear_attention_backward(q32, k32, v32, g32, c.chunk, decay32);
  const auto want = backend::causal_linear_attention_backward(q64, k64, v64, g64, c.chunk, decay64);
  EXPECT_LE(max_relative_error(got.dq, want.dq), kTolerance) << isa << " dq";
  EXPECT_LE(max_relative_error(got.dk, want.dk), kTolerance) << isa << " dk";
  EXPECT_LE(max_relative_error(got.dv, want.dv), kTolerance) << isa << " dv";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CausalFloat,
    ::testing::Values(FloatCase{2, 2, 256, 64, 64, 64, false},
                      FloatCase{2, 2, 256, 64, 64, 64, true},
                      FloatCase{1, 3, 203, 17, 33, 64, false},
                      FloatCase{1, 3, 203, 17, 33, 64, true},
                      FloatCase{1, 2, 300, 16, 20, 150, false},  // chunk > row block: 3 row blocks
                      FloatCase{1, 2, 300, 16, 20, 150, true}, FloatCase{1, 1, 37, 5, 7, 1, false},
                      FloatCase{1, 1, 37, 5, 7, 1, true}, FloatCase{1, 2, 50, 8, 9, 128, false},
                      FloatCase{1, 2, 50, 8, 9, 128, true}),
    [](const ::testing::TestParamInfo<FloatCase>& info) { return case_name(info.param); });

TEST(BidirectionalFloat, ForwardAndBackwardMatchDoubleWithAndWithoutMask) {
  Generator gen(31);
  const int64_t b = 2, h = 3, n = 301, f = 24, d = 40;
  const auto [q, k, v] = random_qkv(gen, b, h, n, f, d, DType::kF32);
  const Tensor g = randn({b, h, n, d}, gen, 0, 1, DType::kF32);
  std::vector<double> mask(b * n, 1.0);
  for (int64_t t = 250; t < n; ++t) mask[t] = 0.0;  // first sequence padded at the end
  const Tensor mask_t = tensor_from(mask, {b, n}, DType::kF32);
  for (const Tensor& m : {Tensor(), mask_t}) {
    const char* which = m.defined() ? "masked" : "unmasked";
    EXPECT_LE(max_relative_error(backend::bidirectional_linear_attention_forward(q, k, v, m),
                                 backend::bidirectional_linear_attention_forward(
                                     q.to(DType::kF64), k.to(DType::kF64), v.to(DType::kF64), m)),
              kTolerance)
        << which;
    const auto got = backend::bidirectional_linear_attention_backward(q, k, v, g, m);
    const auto want = backend::bidirectional_linear_attention_backward(
        q.to(DType::kF64), k.to(DType::kF64), v.to(DType::kF64), g.to(DType::kF64), m);
    EXPECT_LE(max_relative_error(got.dq, want.dq), kTolerance) << which << " dq";
    EXPECT_LE(max_relative_error(got.dk, want.dk), kTolerance) << which << " dk";
    EXPECT_LE(max_relative_error(got.dv, want.dv), kTolerance) << which << " dv";
  }
}

TEST(BidirectionalFloat, NonFinitePaddedKeysStayOut) {
  // Padded positions may hold anything (even inf/NaN from a masked feature map); outputs and
  // the gradients of real positions must not see them.
  Generator gen(32);
  const int64_t n = 20, f = 8, d = 8;
  auto [q, k, v] = random_qkv(gen, 1, 1, n, f, d, DType::kF32);
  const Tensor g = randn({1, 1, n, d}, gen, 0, 1, DType::kF32);
  std::vector<double> mask(n, 1.0);
  mask[n - 1] = 0.0;
  const Tensor mask_t = tensor_from(mask, {1, n}, DType::kF32);
  const Tensor clean = backend::bidirectional_linear_attention_forward(q, k, v, mask_t);
  k.slice(2, n - 1, n).fill(std::numeric_limits<double>::infinity());
  v.slice(2, n - 1, n).fill(std::numeric_limits<double>::quiet_NaN());
  const Tensor dirty = backend::bidirectional_linear_attention_forward(q, k, v, mask_t);
  EXPECT_EQ(max_relative_error(dirty, clean), 0.0);
  const auto grads = backend::bidirectional_linear_attention_backward(q, k, v, g, mask_t);
  for (double x : grads.dq.to_double_vector()) ASSERT_TRUE(std::isfinite(x));
}

// [B, H, N, W] values stored as [B, N, H, W] (what splitting a projection into heads gives):
// a permuted view with a dense last dim.
Tensor heads_view(const Tensor& dense) {
  return dense.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
}

TEST(LinearAttentionLayout, HeadViewsGiveTheSameBitsAndOutputAndDvMergeHeadsForFree) {
  Generator gen(33);
  const int64_t b = 2, h = 3, n = 150, f = 16, d = 12;
  const auto [q, k, v] = random_qkv(gen, b, h, n, f, d, DType::kF32);
  const Tensor g = randn({b, h, n, d}, gen);
  const Tensor qv = heads_view(q), kv = heads_view(k), vv = heads_view(v), gv = heads_view(g);
  ASSERT_FALSE(vv.is_contiguous());
  auto same_bits = [](const Tensor& a, const Tensor& b) {
    return a.to_double_vector() == b.to_double_vector();
  };
  for (bool causal : {true, false}) {
    const char* which = causal ? "causal" : "bidirectional";
    const Tensor dense_out = causal ? backend::causal_linear_attention_forward(q, k, v, 64)
                                    : backend::bidirectional_linear_attention_forward(q, k, v);
    const Tensor view_out = causal ? backend::causal_linear_attention_forward(qv, kv, vv, 64)
                                   : backend::bidirectional_linear_attention_forward(qv, kv, vv);
    EXPECT_TRUE(same_bits(view_out, dense_out)) << which;
    // Stored as [B, N, H, D]: merging heads back is a view, not a copy.
    EXPECT_TRUE(view_out.permute({0, 2, 1, 3}).is_contiguous()) << which;
    const auto dense_grads = causal ? backend::causal_linear_attention_backward(q, k, v, g, 64)
                                    : backend::bidirectional_linear_attention_backward(q, k, v, g);
    const auto view_grads = causal
                                ? backend::causal_linear_attention_backward(qv, kv, vv, gv, 64)
                                : backend::bidirectional_linear_attention_backward(qv, kv, vv, gv);
    EXPECT_TRUE(same_bits(view_grads.dq, dense_grads.dq)) << which << " dq";
    EXPECT_TRUE(same_bits(view_grads.dk, dense_grads.dk)) << which << " dk";
    EXPECT_TRUE(same_bits(view_grads.dv, dense_grads.dv)) << which << " dv";
    // dv is stored like v: [B, N, H, D] for the view (splitting the heads back is free), dense
    // for the dense v.
    EXPECT_TRUE(view_grads.dv.permute({0, 2, 1, 3}).is_contiguous()) << which << " dv";
    EXPECT_TRUE(dense_grads.dv.is_contiguous()) << which << " dv";
  }
  // A strided last dim is copied, not misread.
  const Tensor qt = q.transpose(2, 3).contiguous().transpose(2, 3);
  EXPECT_TRUE(same_bits(backend::causal_linear_attention_forward(qt, k, v, 64),
                        backend::causal_linear_attention_forward(q, k, v, 64)));
}

// One position (N = 1): a size-1 dim may carry any stride (views give 1, or the row width); the
// kernels must not treat it as a leading dimension. Every layout gives the dense result.
TEST(LinearAttentionLayout, OnePositionWithAnyRowStride) {
  Generator gen(35);
  const int64_t b = 2, h = 3, f = 16, d = 12;
  const auto [q, k, v] = random_qkv(gen, b, h, 1, f, d, DType::kF32);
  const Tensor g = randn({b, h, 1, d}, gen);
  // [B, H, D] viewed as [B, H, 1, D], and [B, 1, H, D] with its heads moved forward.
  using Layout = std::function<Tensor(const Tensor&)>;
  const Layout squeezed_view = [](const Tensor& x) {
    return x.reshape({x.size(0), x.size(1), x.size(3)}).contiguous().view(x.shape());
  };
  const Layout head_view = [](const Tensor& x) {
    return x.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
  };
  for (bool causal : {true, false}) {
    const Tensor dense = causal ? backend::causal_linear_attention_forward(q, k, v, 64)
                                : backend::bidirectional_linear_attention_forward(q, k, v);
    const auto dense_grads = causal ? backend::causal_linear_attention_backward(q, k, v, g, 64)
                                    : backend::bidirectional_linear_attention_backward(q, k, v, g);
    for (const Layout& layout : {squeezed_view, head_view}) {
      const Tensor ql = layout(q), kl = layout(k), vl = layout(v), gl = layout(g);
      const Tensor out = causal ? backend::causal_linear_attention_forward(ql, kl, vl, 64)
                                : backend::bidirectional_linear_attention_forward(ql, kl, vl);
      EXPECT_EQ(out.to_double_vector(), dense.to_double_vector()) << causal;
      const auto grads = causal ? backend::causal_linear_attention_backward(ql, kl, vl, gl, 64)
                                : backend::bidirectional_linear_attention_backward(ql, kl, vl, gl);
      EXPECT_EQ(grads.dq.to_double_vector(), dense_grads.dq.to_double_vector()) << causal;
      EXPECT_EQ(grads.dk.to_double_vector(), dense_grads.dk.to_double_vector()) << causal;
      EXPECT_EQ(grads.dv.to_double_vector(), dense_grads.dv.to_double_vector()) << causal;
    }
    // And the dense result is the f64 one: one key, so O = (q·k) v.
    const std::vector<double> qd = q.to_double_vector(), kd = k.to_double_vector(),
                              vd = v.to_double_vector(), od = dense.to_double_vector();
    for (int64_t s = 0; s < b * h; ++s) {
      double score = 0;
      for (int64_t x = 0; x < f; ++x) score += qd[s * f + x] * kd[s * f + x];
      for (int64_t y = 0; y < d; ++y)
        EXPECT_NEAR(od[s * d + y], score * vd[s * d + y],
                    1e-5 * (1 + std::abs(score * vd[s * d + y])));
    }
  }
}

// No positions (N = 0): empty outputs and gradients, no crash, both forms.
TEST(LinearAttentionLayout, NoPositionsGiveEmptyResults) {
  const Tensor q = zeros({2, 3, 0, 8}), v = zeros({2, 3, 0, 4});
  for (bool causal : {true, false}) {
    const Tensor out = causal ? backend::causal_linear_attention_forward(q, q, v, 64)
                              : backend::bidirectional_linear_attention_forward(q, q, v);
    EXPECT_EQ(out.shape(), v.shape());
    const auto grads = causal ? backend::causal_linear_attention_backward(q, q, v, v, 64)
                              : backend::bidirectional_linear_attention_backward(q, q, v, v);
    EXPECT_EQ(grads.dq.shape(), q.shape());
    EXPECT_EQ(grads.dk.shape(), q.shape());
    EXPECT_EQ(grads.dv.shape(), v.shape());
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
