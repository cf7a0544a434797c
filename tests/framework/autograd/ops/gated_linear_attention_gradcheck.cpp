// Gradients of gated linear attention (q, k, v and the log-gates) against central finite
// differences (f64), for per-channel and scalar gates.
#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/gated_linear_attention.h"
#include "framework/autograd/ops/linear_attention.h"
#include "framework/autograd/ops/shape.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::gradcheck;

// Gates in [low, high] with high < 0 by more than the finite-difference step, so the perturbed
// gates stay <= 0.
Tensor gates(Generator& gen, const Shape& shape, double low = -1.5, double high = -0.05) {
  return rand(shape, gen, low, high, DType::kF64);
}

TEST(GatedLinearAttentionGrad, PerChannelGatesAllChunkSizes) {
  Generator gen(1);
  const Tensor q = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 7, 4}, gen, 0, 1, DType::kF64);
  const Tensor g = gates(gen, {2, 2, 7, 3});
  for (int64_t chunk : {1, 3, 7, 64}) {
    EXPECT_TRUE(gradcheck(
        [chunk](const std::vector<Variable>& in) {
          return gated_linear_attention(in[0], in[1], in[2], in[3], chunk);
        },
        {q, k, v, g}))
        << "chunk " << chunk;
  }
}

// With state carry: gradients for q, k, v, the gates and S₀ through both outputs (o and S_N,
// flattened into one vector), per-channel and scalar gates.
TEST(GatedLinearAttentionGrad, WithInitialAndFinalState) {
  Generator gen(11);
  for (int64_t width : {int64_t{3}, int64_t{1}}) {
    const Tensor q = randn({1, 2, 6, 3}, gen, 0, 1, DType::kF64);
    const Tensor k = randn({1, 2, 6, 3}, gen, 0, 1, DType::kF64);
    const Tensor v = randn({1, 2, 6, 2}, gen, 0, 1, DType::kF64);
    const Tensor g = gates(gen, {1, 2, 6, width});
    const Tensor s0 = randn({1, 2, 3, 2}, gen, 0, 1, DType::kF64);
    for (int64_t chunk : {1, 4, 64}) {
      const auto both = [](const CausalAttentionWithState& r) {
        return concat({flatten(r.output), flatten(r.final_state)}, 0);
      };
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Variable>& in) {
            return both(
                gated_linear_attention_with_state(in[0], in[1], in[2], in[3], in[4], chunk));
          },
          {q, k, v, g, s0}))
          << "width " << width << " chunk " << chunk;
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Variable>& in) {
            return both(
                gated_linear_attention_with_state(in[0], in[1], in[2], in[3], Variable(), chunk));
          },
          {q, k, v, g}))
          << "no S0, width " << width << " chunk " << chunk;
    }
  }
}

TEST(GatedLinearAttentionGrad, ScalarGatesAllChunkSizes) {
  Generator gen(2);
  const Tensor q = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 7, 5}, gen, 0, 1, DType::kF64);
  const Tensor g = gates(gen, {2, 2, 7, 1});
  for (int64_t chunk : {1, 3, 7, 64}) {
    EXPECT_TRUE(gradcheck(
        [chunk](const std::vector<Variable>& in) {
          return gated_linear_attention(in[0], in[1], in[2], in[3], chunk);
        },
        {q, k, v, g}))
        << "chunk " << chunk;
  }
}

TEST(GatedLinearAttentionGrad, LongerSequencesWithSubBlocksAndStrongGates) {
  // N = 40 with chunks of 32 and 17 exercises the 16-row sub-blocks inside a chunk, the partial
  // last chunk and gates as strong as -6 per step.
  Generator gen(3);
  for (int64_t width : {int64_t{4}, int64_t{1}}) {
    const Tensor q = randn({1, 1, 40, 4}, gen, 0, 1, DType::kF64);
    const Tensor k = randn({1, 1, 40, 4}, gen, 0, 1, DType::kF64);
    const Tensor v = randn({1, 1, 40, 3}, gen, 0, 1, DType::kF64);
    const Tensor g = gates(gen, {1, 1, 40, width}, -6.0, -0.01);
    for (int64_t chunk : {17, 32}) {
      EXPECT_TRUE(gradcheck(
          [chunk](const std::vector<Variable>& in) {
            return gated_linear_attention(in[0], in[1], in[2], in[3], chunk);
          },
          {q, k, v, g}))
          << "chunk " << chunk << " gate width " << width;
    }
  }
}

TEST(GatedLinearAttentionGrad, NonContiguousInputs) {
  Generator gen(4);
  // [B, N, H, W] permuted to [B, H, N, W] as an attention layer splits heads.
  const Tensor q = randn({1, 6, 2, 3}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor k = randn({1, 6, 2, 3}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor v = randn({1, 6, 2, 4}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  for (int64_t width : {int64_t{3}, int64_t{1}}) {
    const Tensor g = gates(gen, {1, 6, 2, width}).permute({0, 2, 1, 3});
    EXPECT_TRUE(gradcheck(
        [](const std::vector<Variable>& in) {
          return gated_linear_attention(in[0], in[1], in[2], in[3], 4);
        },
        {q, k, v, g}))
        << "gate width " << width;
  }
}

TEST(GatedLinearAttentionGrad, GateComputedFromALogSigmoid) {
  // GLA's gate g = log σ(x) / τ built from autograd ops: the gate gradient flows into x.
  Generator gen(5);
  const Tensor q = randn({1, 2, 9, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({1, 2, 9, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({1, 2, 9, 2}, gen, 0, 1, DType::kF64);
  const Tensor x = randn({1, 2, 9, 3}, gen, 0, 1, DType::kF64);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Variable>& in) {
        const Variable g = log(sigmoid(in[3])) * (1.0 / 16.0);
        return gated_linear_attention(in[0], in[1], in[2], g, 4);
      },
      {q, k, v, x}));
}

TEST(GatedLinearAttentionGrad, ZeroGatesGiveThePlainGradients) {
  Generator gen(6);
  const Tensor q = randn({2, 2, 11, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 11, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 11, 4}, gen, 0, 1, DType::kF64);
  const Tensor grad = randn({2, 2, 11, 4}, gen, 0, 1, DType::kF64);
  auto grads_of = [&](bool gated) {
    Variable qv(q, true), kv(k, true), vv(v, true);
    const Variable o = gated
                           ? gated_linear_attention(
                                 qv, kv, vv, Variable(zeros({2, 2, 11, 1}, DType::kF64), false), 4)
                           : causal_linear_attention(qv, kv, vv, 4);
    o.backward(grad);
    return std::vector<Tensor>{o.data(), qv.grad(), kv.grad(), vv.grad()};
  };
  const auto want = grads_of(false);
  const auto got = grads_of(true);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(testing::allclose(got[i], want[i], 1e-12, 1e-12)) << "tensor " << i;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
