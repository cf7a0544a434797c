// Dropout: reproducible masks, keep rate, scaling, backward = mask * grad, thread independence.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/dropout.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/dropout.h"
#include "framework/backend/primitives/elementwise.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;

// Exact (bitwise) equality of two tensors' values.
bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_double_vector() == b.to_double_vector();
}

TEST(Dropout, SameSeedGivesSameMask) {
  Generator data_gen(1);
  const Variable x(randn({64, 100}, data_gen));
  Generator a(77), b(77), c(78);
  const Tensor ya = dropout(x, 0.3, a, true).data();
  const Tensor yb = dropout(x, 0.3, b, true).data();
  const Tensor yc = dropout(x, 0.3, c, true).data();
  EXPECT_TRUE(same_values(ya, yb));
  EXPECT_FALSE(same_values(ya, yc));
  // The generator advances: a second call draws a new mask.
  EXPECT_FALSE(same_values(dropout(x, 0.3, a, true).data(), ya));
}

// Kept fraction over n elements is Binomial(n, 1-p) / n with standard deviation
// sqrt(p(1-p)/n). With n = 2^20 that is at most 4.9e-4 (p = 0.5); a 5σ band fails a correct
// sampler with probability < 1e-6 for any seed, while an off-by-2^-8 threshold or a swapped
// keep/drop test misses it by far. The same bound applies to the mean of dropout(ones), which
// must be ≈ 1 because kept values are scaled by 1/(1-p).
TEST(Dropout, KeptFractionIsOneMinusP) {
  const int64_t n = int64_t{1} << 20;
  const Variable x(ones({n}));
  Generator gen(5);
  for (double p : {0.1, 0.5, 0.9}) {
    const std::vector<double> y = dropout(x, p, gen, true).data().to_double_vector();
    int64_t kept = 0;
    for (double v : y) {
      if (v != 0.0) {
        ++kept;
        ASSERT_FLOAT_EQ(v, static_cast<float>(1.0 / (1.0 - p)));
      }
    }
    const double fraction = static_cast<double>(kept) / n;
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(fraction, 1.0 - p, 5 * sigma) << "p = " << p;
    EXPECT_NEAR(fraction / (1.0 - p), 1.0, 5 * sigma / (1.0 - p)) << "mean of dropout(ones)";
  }
}

// Neighbouring elements (which share one 64-bit draw) and neighbouring blocks (separate
// streams) must be independent: both-kept pairs occur at rate (1-p)², and block 0's mask is
// not repeated in block 1. n/2 pairs give σ = sqrt(q(1-q)/(n/2)) for q = (1-p)².
TEST(Dropout, NeighboursAndBlocksAreIndependent) {
  const int64_t n = int64_t{1} << 20;
  const double p = 0.5;
  const std::vector<double> m =
      backend::dropout_mask({n}, DType::kF32, p, /*seed=*/12345).to_double_vector();
  int64_t both = 0;
  for (int64_t i = 0; i + 1 < n; i += 2) both += (m[i] != 0 && m[i + 1] != 0);
  const double q = (1 - p) * (1 - p);
  EXPECT_NEAR(static_cast<double>(both) / (n / 2), q, 5 * std::sqrt(q * (1 - q) / (n / 2)));
  const int64_t block = backend::kDropoutBlock;
  EXPECT_FALSE(std::equal(m.begin(), m.begin() + block, m.begin() + block));
}

TEST(Dropout, BackwardIsMaskTimesGrad) {
  Generator data_gen(2);
  const Tensor xd = randn({3, 50, 70}, data_gen, 0.0, 1.0, DType::kF64);
  const Tensor g = randn({3, 50, 70}, data_gen, 0.0, 1.0, DType::kF64);
  const double p = 0.25;
  Generator gen(9);
  Generator replay = gen;  // the op draws its seed from gen: replay it to rebuild the mask
  const Tensor mask = backend::dropout_mask(xd.shape(), DType::kF64, p, replay.next_u64());
  Variable x(xd, true);
  const Variable y = dropout(x, p, gen, true);
  EXPECT_TRUE(allclose(y.data(), backend::mul(xd, mask), 0, 0));
  y.backward(g);
  EXPECT_TRUE(allclose(x.grad(), backend::mul(g, mask), 0, 0));
  // Dropped elements get exactly zero gradient; kept ones g / (1-p).
  const std::vector<double> yv = y.data().to_double_vector();
  const std::vector<double> gv = g.to_double_vector();
  const std::vector<double> gx = x.grad().to_double_vector();
  for (size_t i = 0; i < yv.size(); ++i) {
    ASSERT_DOUBLE_EQ(gx[i], yv[i] == 0.0 ? 0.0 : gv[i] / (1 - p)) << i;
  }
}

TEST(Dropout, NotTrainingOrZeroPIsIdentity) {
  Generator data_gen(3);
  const Variable x(randn({4, 5}, data_gen), true);
  Generator gen(11);
  const Generator::State before = gen.state();
  const Variable eval = dropout(x, 0.5, gen, false);
  EXPECT_TRUE(same_values(eval.data(), x.data()));
  const Variable zero_p = dropout(x, 0.0, gen, true);
  EXPECT_TRUE(same_values(zero_p.data(), x.data()));
  EXPECT_EQ(gen.state(), before) << "identity dropout must not consume randomness";
  eval.backward(ones({4, 5}));
  EXPECT_TRUE(allclose(x.grad(), ones({4, 5}), 0, 0));
}

// Blocks have fixed streams, so 1 and 2 threads give the same bits (including the tail block).
TEST(Dropout, IndependentOfThreadCount) {
  Generator data_gen(4);
  const Tensor x = randn({37, 4099}, data_gen);  // ~150k elements: runs in parallel
  const int saved_threads = backend::num_threads();
  std::vector<Tensor> results;
  for (int threads : {1, 2}) {
    backend::set_num_threads(threads);
    Generator gen(21);
    results.push_back(dropout(Variable(x), 0.4, gen, true).data());
  }
  backend::set_num_threads(saved_threads);
  EXPECT_TRUE(same_values(results[0], results[1]));
}

TEST(Dropout, ProbabilityOutsideRangeIsAnError) {
  const Variable x(zeros({2, 2}));
  Generator gen(1);
  for (double p : {1.0, -0.1, 1.5}) {
    try {
      dropout(x, p, gen, true);
      FAIL() << "expected an error for p = " << p;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dropout: p = "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("is outside [0, 1)"), std::string::npos) << e.what();
    }
  }
  // Checked even when not training, so a bad recipe fails on the first step.
  EXPECT_THROW(dropout(x, 1.0, gen, false), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
