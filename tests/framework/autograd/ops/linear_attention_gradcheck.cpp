// Gradients of linear attention and fused LRPE against central finite differences (f64).
#include <cmath>

#include <gtest/gtest.h>

#include "framework/autograd/ops/indexing.h"
#include "framework/autograd/ops/linear_attention.h"
#include "framework/autograd/ops/lrpe.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::gradcheck;

TEST(LinearAttentionGrad, CausalAllChunkSizes) {
  Generator gen(1);
  const Tensor q = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 7, 5}, gen, 0, 1, DType::kF64);
  for (int64_t chunk : {1, 3, 7, 64}) {
    EXPECT_TRUE(gradcheck(
        [chunk](const std::vector<Variable>& in) {
          return causal_linear_attention(in[0], in[1], in[2], chunk);
        },
        {q, k, v}))
        << "chunk " << chunk;
  }
}

TEST(LinearAttentionGrad, ChunkedGradientsEqualQuadraticMaskedForm) {
  // The quadratic form O = tril(Q Kᵀ) V composed from autograd primitives is the reference:
  // its gradients come from matmul / tril backward, not from the fused kernel.
  Generator gen(6);
  for (int64_t n : {1, 5, 9}) {
    const Tensor q = randn({2, 3, n, 4}, gen, 0, 1, DType::kF64);
    const Tensor k = randn({2, 3, n, 4}, gen, 0, 1, DType::kF64);
    const Tensor v = randn({2, 3, n, 5}, gen, 0, 1, DType::kF64);
    const Tensor g = randn({2, 3, n, 5}, gen, 0, 1, DType::kF64);
    auto grads_of = [&](bool fused, int64_t chunk) {
      Variable qv(q, true), kv(k, true), vv(v, true);
      const Variable o = fused ? causal_linear_attention(qv, kv, vv, chunk)
                               : matmul(tril(matmul(qv, kv, false, true)), vv);
      o.backward(g);
      return std::vector<Tensor>{o.data(), qv.grad(), kv.grad(), vv.grad()};
    };
    const auto ref = grads_of(false, 0);
    for (int64_t chunk : {1, 2, 4, 64}) {
      const auto got = grads_of(true, chunk);
      for (size_t i = 0; i < ref.size(); ++i) {
        EXPECT_TRUE(testing::allclose(got[i], ref[i], 1e-10, 1e-10))
            << "N=" << n << " chunk=" << chunk << " tensor " << i;
      }
    }
  }
}

TEST(LinearAttentionGrad, CausalWithDecay) {
  Generator gen(4);
  const Tensor q = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 7, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 7, 2}, gen, 0, 1, DType::kF64);
  const Tensor decay = tensor_from({0.8, 0.95}, {2}, DType::kF64);
  for (int64_t chunk : {1, 3, 64}) {
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Variable>& in) {
          return causal_linear_attention(in[0], in[1], in[2], chunk, decay);
        },
        {q, k, v}))
        << "chunk " << chunk;
  }
}

// With state carry: gradients for q, k, v and S₀ through both outputs (o and S_N, flattened
// into one vector), with and without decay, and S₀ absent (zeros, no gradient).
TEST(LinearAttentionGrad, CausalWithInitialAndFinalState) {
  Generator gen(8);
  const Tensor q = randn({1, 2, 6, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({1, 2, 6, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({1, 2, 6, 2}, gen, 0, 1, DType::kF64);
  const Tensor s0 = randn({1, 2, 3, 2}, gen, 0, 1, DType::kF64);
  for (const Tensor& decay : {Tensor(), tensor_from({0.8, 0.95}, {2}, DType::kF64)}) {
    for (int64_t chunk : {1, 4, 64}) {
      const auto both = [&](const CausalAttentionWithState& r) {
        return concat({flatten(r.output), flatten(r.final_state)}, 0);
      };
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Variable>& in) {
            return both(
                causal_linear_attention_with_state(in[0], in[1], in[2], in[3], chunk, decay));
          },
          {q, k, v, s0}))
          << "chunk " << chunk << " decay " << decay.defined();
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Variable>& in) {
            return both(
                causal_linear_attention_with_state(in[0], in[1], in[2], Variable(), chunk, decay));
          },
          {q, k, v}))
          << "no S0, chunk " << chunk << " decay " << decay.defined();
    }
  }
}

// Two segments chained through the state train exactly like the whole sequence: the loss of the
// stitched outputs has the same gradients (q, k, v as leaves of the whole sequence, narrowed).
TEST(LinearAttentionGrad, ChainedSegmentsBackpropagateAsOneSequence) {
  Generator gen(9);
  const Tensor q = randn({2, 2, 13, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 13, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 13, 4}, gen, 0, 1, DType::kF64);
  const Tensor g = randn({2, 2, 13, 4}, gen, 0, 1, DType::kF64);
  const Tensor decay = tensor_from({0.9, 0.7}, {2}, DType::kF64);
  auto grads_of = [&](const std::vector<int64_t>& cuts) {
    Variable qv(q, true), kv(k, true), vv(v, true);
    std::vector<Variable> pieces;
    Variable state;
    for (size_t s = 0; s + 1 < cuts.size(); ++s) {
      const int64_t len = cuts[s + 1] - cuts[s];
      const CausalAttentionWithState r = causal_linear_attention_with_state(
          narrow(qv, 2, cuts[s], len), narrow(kv, 2, cuts[s], len), narrow(vv, 2, cuts[s], len),
          state, 4, decay);
      pieces.push_back(r.output);
      state = r.final_state;
    }
    const Variable o = concat(pieces, 2);
    o.backward(g);
    return std::vector<Tensor>{o.data(), qv.grad(), kv.grad(), vv.grad()};
  };
  const auto whole = grads_of({0, 13});
  for (const std::vector<int64_t>& cuts :
       {std::vector<int64_t>{0, 5, 13}, std::vector<int64_t>{0, 4, 8, 12, 13}}) {
    const auto parts = grads_of(cuts);
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_TRUE(testing::allclose(parts[i], whole[i], 1e-12, 1e-12))
          << "cuts " << cuts.size() << " tensor " << i;
    }
  }
}

TEST(LinearAttentionGrad, CausalNonContiguousInputs) {
  Generator gen(2);
  // [B, N, H, F] permuted to [B, H, N, F] as the attention layer does.
  const Tensor q = randn({1, 6, 2, 3}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor k = randn({1, 6, 2, 3}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  const Tensor v = randn({1, 6, 2, 4}, gen, 0, 1, DType::kF64).permute({0, 2, 1, 3});
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Variable>& in) {
        return causal_linear_attention(in[0], in[1], in[2], 4);
      },
      {q, k, v}));
}

TEST(LinearAttentionGrad, BidirectionalWithAndWithoutMask) {
  Generator gen(3);
  const Tensor q = randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64);
  const Tensor k = randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64);
  const Tensor v = randn({2, 2, 5, 4}, gen, 0, 1, DType::kF64);
  const Tensor mask = tensor_from({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, {2, 5}, DType::kF32);
  for (const Tensor& m : {Tensor(), mask}) {
    EXPECT_TRUE(gradcheck(
        [m](const std::vector<Variable>& in) {
          return bidirectional_linear_attention(in[0], in[1], in[2], m);
        },
        {q, k, v}));
  }
}

struct LrpeGradCase {
  backend::LrpeCore core;
  backend::LrpePairing pairing;
  backend::LrpeP p;
  int64_t d;
};

class LrpeGrad : public ::testing::TestWithParam<LrpeGradCase> {};

TEST_P(LrpeGrad, InputThetaAndHouseholderVector) {
  const LrpeGradCase c = GetParam();
  Generator gen(static_cast<uint64_t>(c.d) * 7 + static_cast<uint64_t>(c.core));
  backend::LrpeKernelConfig config;
  config.core = c.core;
  config.pairing = c.pairing;
  config.p = c.p;
  config.offset = 2;
  const int64_t m = c.core == backend::LrpeCore::kUnitary ? c.d : c.d / 2;
  std::vector<Tensor> inputs = {randn({2, 5, c.d}, gen, 0, 1, DType::kF64)};
  std::vector<bool> check = {true};
  inputs.push_back(c.core == backend::LrpeCore::kPermutation
                       ? zeros({1}, DType::kF64)
                       : rand({m}, gen, 0.05, 1.0, DType::kF64));
  check.push_back(c.core != backend::LrpeCore::kPermutation);
  // w need not be unit for the kernel's gradient; a unit vector keeps it realistic.
  Tensor w = randn({c.d}, gen, 0, 1, DType::kF64);
  double norm = 0;
  for (double x : w.to_double_vector()) norm += x * x;
  for (int64_t j = 0; j < c.d; ++j) w.set({j}, w.at({j}) / std::sqrt(norm));
  inputs.push_back(w);
  check.push_back(c.p == backend::LrpeP::kHouseholder);
  const Tensor perm = randperm(c.d, gen);
  testing::GradcheckOptions options;
  options.check = check;
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        return lrpe(config, in[0], check[1] ? in[1] : Variable(), check[2] ? in[2] : Variable(),
                    perm);
      },
      inputs, options));
}

std::vector<LrpeGradCase> lrpe_grad_cases() {
  std::vector<LrpeGradCase> out;
  for (auto p :
       {backend::LrpeP::kIdentity, backend::LrpeP::kHouseholder, backend::LrpeP::kOddEven}) {
    for (int64_t d : {4, 5}) {
      out.push_back({backend::LrpeCore::kUnitary, backend::LrpePairing::kAdjacent, p, d});
      out.push_back({backend::LrpeCore::kOrthogonal, backend::LrpePairing::kAdjacent, p, d});
      out.push_back({backend::LrpeCore::kOrthogonal, backend::LrpePairing::kHalf, p, d});
      out.push_back({backend::LrpeCore::kPermutation, backend::LrpePairing::kAdjacent, p, d});
    }
  }
  return out;
}

std::string lrpe_case_name(const ::testing::TestParamInfo<LrpeGradCase>& info) {
  const char* core[] = {"Type1", "Type2", "Type3"};
  const char* p_name[] = {"Identity", "Householder", "OddEven"};
  const char* pair[] = {"Adj", "Half"};
  const auto& c = info.param;
  return std::string(core[static_cast<int>(c.core)]) + pair[static_cast<int>(c.pairing)] +
         p_name[static_cast<int>(c.p)] + "D" + std::to_string(c.d);
}

INSTANTIATE_TEST_SUITE_P(Variants, LrpeGrad, ::testing::ValuesIn(lrpe_grad_cases()),
                         lrpe_case_name);

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
