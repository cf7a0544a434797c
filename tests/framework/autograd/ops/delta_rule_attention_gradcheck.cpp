// Delta-rule attention gradients vs central differences and the composed recurrence (f64).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/delta_rule_attention.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::gradcheck;

// q, k [B, H, N, F] (keys normalised), v [B, H, N, D], beta in (0.1, 0.9), log_gate in
// [−1.5, −0.01] ([B, H, N]).
std::vector<Tensor> inputs(uint64_t seed, int64_t b, int64_t h, int64_t n, int64_t f, int64_t d) {
  Generator gen(seed);
  const Tensor q = randn({b, h, n, f}, gen, 0, 1, DType::kF64);
  const Tensor k = testing::l2_normalise_rows(randn({b, h, n, f}, gen, 0, 1, DType::kF64));
  const Tensor v = randn({b, h, n, d}, gen, 0, 1, DType::kF64);
  const Tensor beta = rand({b, h, n}, gen, 0.1, 0.9, DType::kF64);
  const Tensor gate = rand({b, h, n}, gen, -1.5, -0.01, DType::kF64);
  return {q, k, v, beta, gate};
}

TEST(DeltaRuleAttentionGrad, PlainAllChunkSizes) {
  const std::vector<Tensor> in = inputs(1, 2, 2, 7, 3, 2);
  for (int64_t chunk : {1, 3, 7, 64}) {
    EXPECT_TRUE(gradcheck(
        [chunk](const std::vector<Variable>& x) {
          return delta_rule_attention(x[0], x[1], x[2], x[3], Variable(), chunk);
        },
        {in[0], in[1], in[2], in[3]}))
        << "chunk " << chunk;
  }
}

TEST(DeltaRuleAttentionGrad, GatedAllChunkSizes) {
  const std::vector<Tensor> in = inputs(2, 2, 2, 7, 3, 2);
  for (int64_t chunk : {1, 3, 7, 64}) {
    EXPECT_TRUE(gradcheck(
        [chunk](const std::vector<Variable>& x) {
          return delta_rule_attention(x[0], x[1], x[2], x[3], x[4], chunk);
        },
        in))
        << "chunk " << chunk;
  }
}

// With state carry: gradients for q, k, v, beta, the gates and S₀ through both outputs (o and
// S_N, flattened into one vector), DeltaNet and Gated DeltaNet, several chunks.
TEST(DeltaRuleAttentionGrad, WithInitialAndFinalState) {
  const std::vector<Tensor> in = inputs(3, 1, 2, 7, 3, 2);
  Generator gen(4);
  const Tensor s0 = randn({1, 2, 3, 2}, gen, 0, 1, DType::kF64);
  const auto both = [](const CausalAttentionWithState& r) {
    return concat({flatten(r.output), flatten(r.final_state)}, 0);
  };
  for (int64_t chunk : {1, 3, 64}) {
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Variable>& x) {
          return both(delta_rule_attention_with_state(x[0], x[1], x[2], x[3], x[4], x[5], chunk));
        },
        {in[0], in[1], in[2], in[3], in[4], s0}))
        << "gated, chunk " << chunk;
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Variable>& x) {
          return both(
              delta_rule_attention_with_state(x[0], x[1], x[2], x[3], Variable(), x[4], chunk));
        },
        {in[0], in[1], in[2], in[3], s0}))
        << "plain, chunk " << chunk;
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Variable>& x) {
          return both(
              delta_rule_attention_with_state(x[0], x[1], x[2], x[3], x[4], Variable(), chunk));
        },
        {in[0], in[1], in[2], in[3], in[4]}))
        << "no S0, chunk " << chunk;
  }
}

TEST(DeltaRuleAttentionGrad, GatedLongerWithUnnormalisedKeysAndFNotD) {
  // Several chunks with a partial last one, F != D, keys not normalised, strong gates.
  Generator gen(3);
  const Tensor q = randn({1, 2, 11, 5}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({1, 2, 11, 5}, gen, 0, 0.5, DType::kF64);
  const Tensor v = randn({1, 2, 11, 3}, gen, 0, 1, DType::kF64);
  const Tensor beta = rand({1, 2, 11}, gen, 0.1, 0.9, DType::kF64);
  const Tensor gate = rand({1, 2, 11}, gen, -5.0, -0.01, DType::kF64);
  for (int64_t chunk : {4, 16}) {
    EXPECT_TRUE(gradcheck(
        [chunk](const std::vector<Variable>& x) {
          return delta_rule_attention(x[0], x[1], x[2], x[3], x[4], chunk);
        },
        {q, k, v, beta, gate}))
        << "chunk " << chunk;
  }
}

// The recurrence from autograd primitives, token by token, on [G, N, ·] inputs:
// S = α S + kᵀ (β (v − α k S)), o_t = q_t S.
Variable composed_delta(const Variable& q, const Variable& k, const Variable& v,
                        const Variable& beta, const Variable& gate) {
  const int64_t groups = q.size(0), n = q.size(1), f = q.size(2), d = v.size(2);
  Variable s(zeros({groups, f, d}, DType::kF64), false);
  std::vector<Variable> outs;
  for (int64_t t = 0; t < n; ++t) {
    const Variable qt = slice(q, 1, t, t + 1);                   // [G, 1, F]
    const Variable kt = slice(k, 1, t, t + 1);                   // [G, 1, F]
    const Variable vt = slice(v, 1, t, t + 1);                   // [G, 1, D]
    const Variable bt = unsqueeze(slice(beta, 1, t, t + 1), 2);  // [G, 1, 1]
    if (gate.defined()) s = mul(exp(unsqueeze(slice(gate, 1, t, t + 1), 2)), s);
    const Variable u = mul(bt, sub(vt, matmul(kt, s)));  // [G, 1, D]
    s = add(s, matmul(kt, u, /*transpose_a=*/true));
    outs.push_back(matmul(qt, s));
  }
  return concat(outs, 1);
}

TEST(DeltaRuleAttentionGrad, FusedEqualsComposedRecurrence) {
  for (bool gated : {false, true}) {
    for (int64_t n : {1, 6, 13}) {
      const std::vector<Tensor> in = inputs(10 + n, 1, 3, n, 4, 5);
      Generator gen(20 + n);
      const Tensor g = randn({1, 3, n, 5}, gen, 0, 1, DType::kF64);
      auto grads_of = [&](bool fused, int64_t chunk) {
        std::vector<Variable> x;
        for (const Tensor& t : in) x.emplace_back(t, true);
        const Variable gate = gated ? x[4] : Variable();
        Variable o;
        if (fused) {
          o = delta_rule_attention(x[0], x[1], x[2], x[3], gate, chunk);
        } else {
          const auto flat = [&](const Variable& y) {
            Shape shape{3, n};
            if (y.dim() == 4) shape.push_back(y.size(3));
            return reshape(y, shape);
          };
          o = reshape(composed_delta(flat(x[0]), flat(x[1]), flat(x[2]), flat(x[3]),
                                     gated ? flat(x[4]) : Variable()),
                      {1, 3, n, 5});
        }
        o.backward(g);
        std::vector<Tensor> out = {o.data(), x[0].grad(), x[1].grad(), x[2].grad(), x[3].grad()};
        if (gated) out.push_back(x[4].grad());
        return out;
      };
      const auto ref = grads_of(false, 0);
      for (int64_t chunk : {1, 4, 64}) {
        const auto got = grads_of(true, chunk);
        ASSERT_EQ(got.size(), ref.size());
        for (size_t i = 0; i < ref.size(); ++i) {
          EXPECT_TRUE(testing::allclose(got[i], ref[i], 1e-10, 1e-10))
              << "gated " << gated << " N=" << n << " chunk=" << chunk << " tensor " << i;
        }
      }
    }
  }
}

TEST(DeltaRuleAttentionGrad, NoGradientsRequestedRecordsNothing) {
  const std::vector<Tensor> in = inputs(4, 1, 1, 5, 3, 3);
  const Variable o = delta_rule_attention(Variable(in[0]), Variable(in[1]), Variable(in[2]),
                                          Variable(in[3]), Variable(), 2);
  EXPECT_FALSE(o.requires_grad());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
