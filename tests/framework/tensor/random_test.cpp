// Generator streams (reproducibility, independence, checkpointing) and random factories.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

// Upper chi-square quantile with `dof` degrees of freedom at normal deviate z
// (Wilson-Hilferty). z = 4.75 is a one-sided tail of ~1e-6: a correct generator fails a test
// with this threshold about once in a million seeds, a biased one fails by a wide margin.
double chi_square_threshold(int dof, double z = 4.75) {
  const double k = dof;
  const double c = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * c * c * c;
}

double chi_square(const std::vector<int64_t>& counts, double expected_each) {
  double s = 0;
  for (int64_t c : counts) s += (c - expected_each) * (c - expected_each) / expected_each;
  return s;
}

// Multiplicative inverse of an odd number modulo 2^64 (Newton: each step doubles the bits).
uint64_t inverse_mod_2_64(uint64_t a) {
  uint64_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}

uint64_t rotr(uint64_t x, int k) {
  return (x >> k) | (x << (64 - k));
}

// A generator state whose next next_u64() returns `output`: xoshiro256** outputs
// rotl(s[1] * 5, 7) * 9, which is invertible in s[1]. Lets tests hit the extreme outputs.
Generator::State state_yielding(uint64_t output) {
  const uint64_t s1 = rotr(output * inverse_mod_2_64(9), 7) * inverse_mod_2_64(5);
  return {0x0123456789abcdefull, s1, 0xfedcba9876543210ull, 0x0f1e2d3c4b5a6978ull};
}

TEST(Generator, KnownAnswerForSeedZero) {
  // Seeding is SplitMix64 from the seed; outputs are xoshiro256**. Expected words computed by
  // an independent Python implementation of both published algorithms.
  Generator gen(0);
  EXPECT_EQ(gen.state(), (Generator::State{0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
                                           0x06c45d188009454full, 0xf88bb8a8724c81ecull}));
  const uint64_t expected[] = {0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull, 0x1a5f849d4933e6e0ull,
                               0x6aa594f1262d2d2cull, 0xbba5ad4a1f842e59ull};
  for (uint64_t e : expected) EXPECT_EQ(gen.next_u64(), e);
}

TEST(Generator, StateCraftingHelperWorks) {
  for (uint64_t want : {uint64_t{0}, UINT64_MAX, uint64_t{12345}, uint64_t{1} << 63}) {
    Generator gen;
    gen.set_state(state_yielding(want));
    EXPECT_EQ(gen.next_u64(), want);
  }
}

TEST(Generator, SameSeedSameStream) {
  Generator a(42);
  Generator b(42);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next_u64(), b.next_u64());
  Generator c(42);
  Generator d(42);
  const Tensor x = randn({50}, c);
  const Tensor y = randn({50}, d);
  EXPECT_EQ(x.to_double_vector(), y.to_double_vector());
}

TEST(Generator, DifferentSeedsDiffer) {
  std::set<uint64_t> firsts;
  for (uint64_t seed = 0; seed < 256; ++seed) {
    Generator g(seed);
    firsts.insert(g.next_u64());
  }
  EXPECT_EQ(firsts.size(), 256u);
  // Adjacent seeds share no value in their first 1000 outputs (a collision among 2000 random
  // 64-bit values has probability ~1e-13).
  Generator a(1);
  Generator b(2);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(a.next_u64());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen.count(b.next_u64()), 0u);
}

// Pearson correlation of two equal-length samples.
double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

TEST(Generator, SplitGivesIndependentDeterministicStreams) {
  Generator parent(7);
  const Generator::State before = parent.state();
  Generator child = parent.split();
  EXPECT_NE(parent.state(), before) << "split must advance the parent";
  Generator child2 = parent.split();
  // Replaying the parent from `before` reproduces both children.
  Generator replay;
  replay.set_state(before);
  Generator replay_child = replay.split();
  EXPECT_EQ(replay_child.state(), child.state());
  EXPECT_EQ(replay.split().state(), child2.state());

  // Children, and parent after splitting, are pairwise uncorrelated and never coincide.
  // With n = 20000 the correlation of independent streams has sd 1/sqrt(n) = 0.007; 0.05
  // is 7 sd.
  const int n = 20000;
  std::vector<double> p(n), c1(n), c2(n);
  std::set<uint64_t> values;
  for (int i = 0; i < n; ++i) {
    const uint64_t a = parent.next_u64();
    const uint64_t b = child.next_u64();
    const uint64_t c = child2.next_u64();
    values.insert(a);
    values.insert(b);
    values.insert(c);
    p[i] = static_cast<double>(a >> 11);
    c1[i] = static_cast<double>(b >> 11);
    c2[i] = static_cast<double>(c >> 11);
  }
  EXPECT_EQ(values.size(), 3u * n);
  EXPECT_LT(std::abs(correlation(p, c1)), 0.05);
  EXPECT_LT(std::abs(correlation(p, c2)), 0.05);
  EXPECT_LT(std::abs(correlation(c1, c2)), 0.05);
  // Lag-1 correlation between the child and the parent's stream shifted by one.
  std::vector<double> p_shift(p.begin() + 1, p.end());
  std::vector<double> c_trim(c1.begin(), c1.end() - 1);
  EXPECT_LT(std::abs(correlation(p_shift, c_trim)), 0.05);
}

TEST(Generator, StateSaveRestoreResumesExactly) {
  Generator gen(2024);
  for (int i = 0; i < 137; ++i) gen.next_u64();
  const Generator::State saved = gen.state();
  std::vector<uint64_t> first;
  for (int i = 0; i < 500; ++i) first.push_back(gen.next_u64());
  const Tensor t1 = randn({3, 4}, gen);
  // Restore into the same object and into a fresh one.
  gen.set_state(saved);
  Generator other(999);
  other.set_state(saved);
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(gen.next_u64(), first[i]);
    ASSERT_EQ(other.next_u64(), first[i]);
  }
  EXPECT_EQ(randn({3, 4}, gen).to_double_vector(), t1.to_double_vector());
  EXPECT_EQ(randn({3, 4}, other).to_double_vector(), t1.to_double_vector());
}

TEST(Generator, UniformsStayBelowOne) {
  Generator gen;
  gen.set_state(state_yielding(UINT64_MAX));
  const double d = gen.next_double();
  EXPECT_LT(d, 1.0);
  EXPECT_EQ(d, 1.0 - std::ldexp(1.0, -53));
  gen.set_state(state_yielding(UINT64_MAX));
  const float f = gen.next_float();
  EXPECT_LT(f, 1.0f);
  EXPECT_EQ(f, 1.0f - std::ldexp(1.0f, -24));
  gen.set_state(state_yielding(0));
  EXPECT_EQ(gen.next_double(), 0.0);
  gen.set_state(state_yielding(0));
  EXPECT_TRUE(std::isfinite(gen.next_normal()));  // u1 = 0 must not give log(0)
}

TEST(Generator, NextBelowInRangeAndUnbiased) {
  Generator gen(3);
  EXPECT_THROW(gen.next_below(0), Error);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(gen.next_below(1), 0u);
  for (uint64_t n : {uint64_t{2}, uint64_t{3}, uint64_t{10}, (uint64_t{1} << 33) + 1,
                     (uint64_t{1} << 63) + 1, UINT64_MAX}) {
    for (int i = 0; i < 2000; ++i) ASSERT_LT(gen.next_below(n), n);
  }
  // Chi-square over 7 residues, 70000 draws (10000 expected in each).
  std::vector<int64_t> counts(7, 0);
  for (int i = 0; i < 70000; ++i) ++counts[gen.next_below(7)];
  EXPECT_LT(chi_square(counts, 10000), chi_square_threshold(6));
  // n = 3 * 2^62: plain `x % n` would put half the mass below 2^62 (residues < 2^62 have two
  // preimages); unbiased sampling puts a third there. With 30000 draws the fraction has sd
  // sqrt(2/9 / 30000) = 0.0027, so +-0.02 is 7 sd and far from 0.5.
  const uint64_t n = uint64_t{3} << 62;
  int below = 0;
  const int draws = 30000;
  for (int i = 0; i < draws; ++i) {
    const uint64_t x = gen.next_below(n);
    ASSERT_LT(x, n);
    below += x < (uint64_t{1} << 62);
  }
  EXPECT_NEAR(static_cast<double>(below) / draws, 1.0 / 3.0, 0.02);
}

TEST(Random, RandnMomentsAndTails) {
  // n = 200000 draws. Mean has sd 1/sqrt(n) = 0.0022, sample sd has sd ~1/sqrt(2n) = 0.0016,
  // tail fraction p has sd sqrt(p(1-p)/n). Tolerances are 5 sd.
  const int n = 200000;
  const double mean = 2.0;
  const double stddev = 3.0;
  Generator gen(11);
  const std::vector<double> x = randn({n}, gen, mean, stddev, DType::kF64).to_double_vector();
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  double var = 0;
  for (double v : x) var += (v - m) * (v - m);
  var /= (n - 1);
  EXPECT_NEAR(m, mean, 5 * stddev / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(var), stddev, 5 * stddev / std::sqrt(2.0 * n));
  for (double k : {1.0, 2.0, 3.0}) {
    const double p = std::erfc(k / std::sqrt(2.0));  // P(|z| > k)
    int64_t outside = 0;
    for (double v : x) outside += std::abs(v - mean) > k * stddev;
    EXPECT_NEAR(static_cast<double>(outside) / n, p, 5 * std::sqrt(p * (1 - p) / n)) << k;
  }
  // Symmetry: fraction above the mean is 1/2 (sd 0.0011).
  int64_t above = 0;
  for (double v : x) above += v > mean;
  EXPECT_NEAR(static_cast<double>(above) / n, 0.5, 5 * 0.5 / std::sqrt(n));
  // f32 and bf16 outputs are the f64 draws rounded.
  Generator a(11);
  Generator b(11);
  const Tensor r32 = randn({100}, a, mean, stddev, DType::kF32);
  const std::vector<double> r64 = randn({100}, b, mean, stddev, DType::kF64).to_double_vector();
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(r32.at({i}), static_cast<double>(static_cast<float>(r64[i])));
  EXPECT_THROW(randn({2}, gen, 0, 1, DType::kI32), Error);
}

TEST(Random, RandUniformMoments) {
  // Uniform on [-1, 3): mean 1, variance 16/12. n = 100000: mean sd = sqrt(16/12/n) = 0.0037.
  const int n = 100000;
  Generator gen(12);
  const std::vector<double> x = rand({n}, gen, -1.0, 3.0, DType::kF64).to_double_vector();
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  EXPECT_NEAR(m, 1.0, 5 * std::sqrt(16.0 / 12.0 / n));
  std::vector<int64_t> counts(16, 0);
  for (double v : x) {
    ASSERT_GE(v, -1.0);
    ASSERT_LT(v, 3.0);
    ++counts[static_cast<int>((v + 1.0) * 4.0)];
  }
  EXPECT_LT(chi_square(counts, n / 16.0), chi_square_threshold(15));
  EXPECT_THROW(rand({2}, gen, 0, 1, DType::kI64), Error);
}

TEST(Random, RandNeverReturnsHighEvenAfterRounding) {
  // The largest uniform, 1 - 2^-53, is below 1 in f64 but rounds to 1 in f32 and bf16 (and
  // low + (high - low) u can round to high in f64 too). rand promises [low, high).
  struct Range {
    double low;
    double high;
  };
  const Range ranges[] = {{0.0, 1.0}, {-1.0, 1.0}, {0.5, 0.75}, {-3.0, -2.0}, {1e-3, 100.0}};
  for (DType dtype : {DType::kF32, DType::kF64, DType::kBF16}) {
    for (const Range& r : ranges) {
      for (uint64_t top : {UINT64_MAX, UINT64_MAX - (uint64_t{1} << 20),
                           UINT64_MAX - (uint64_t{1} << 40), uint64_t{0}}) {
        Generator gen;
        gen.set_state(state_yielding(top));
        const double v = rand({1}, gen, r.low, r.high, dtype).item();
        // The bounds as the dtype represents them.
        const double low = tensor_from({r.low}, {1}, dtype).item();
        const double high = tensor_from({r.high}, {1}, dtype).item();
        EXPECT_GE(v, low) << dtype_name(dtype) << " [" << r.low << ", " << r.high << ")";
        EXPECT_LT(v, high) << dtype_name(dtype) << " [" << r.low << ", " << r.high
                           << ") top=" << std::hex << top;
      }
    }
  }
  // Bulk: bf16 rounds to 1 for any uniform above 1 - 2^-9, i.e. ~1 in 500 draws.
  Generator gen(13);
  for (double v : rand({20000}, gen, 0.0, 1.0, DType::kBF16).to_double_vector()) {
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
  }
}

TEST(Random, RandintBoundsAndCoverage) {
  Generator gen(21);
  const std::vector<double> v = randint({5000}, gen, -3, 4).to_double_vector();
  std::vector<int64_t> counts(7, 0);
  for (double x : v) {
    ASSERT_EQ(x, std::floor(x));
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ++counts[static_cast<int>(x) + 3];
  }
  EXPECT_LT(chi_square(counts, 5000.0 / 7), chi_square_threshold(6));
  const Tensor i32 = randint({10}, gen, 0, 2, DType::kI32);
  EXPECT_EQ(i32.dtype(), DType::kI32);
  EXPECT_EQ(randint({3}, gen, 5, 6).to_double_vector(), (std::vector<double>{5, 5, 5}));
  EXPECT_THROW(randint({3}, gen, 4, 4), Error);
  EXPECT_THROW(randint({3}, gen, 4, 1), Error);
}

TEST(Random, RandpermIsAUniformPermutation) {
  Generator gen(31);
  for (int64_t n : {0, 1, 2, 17, 1000}) {
    const Tensor p = randperm(n, gen);
    EXPECT_EQ(p.dtype(), DType::kI64);
    ASSERT_EQ(p.shape(), (Shape{n}));
    std::vector<int64_t> v(p.data<int64_t>(), p.data<int64_t>() + n);
    std::sort(v.begin(), v.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i);
  }
  // All 24 permutations of 4 elements, 48000 draws (2000 expected each).
  std::map<std::vector<int64_t>, int64_t> seen;
  for (int i = 0; i < 48000; ++i) {
    const Tensor p = randperm(4, gen);
    ++seen[std::vector<int64_t>(p.data<int64_t>(), p.data<int64_t>() + 4)];
  }
  ASSERT_EQ(seen.size(), 24u);
  std::vector<int64_t> counts;
  for (const auto& [perm, count] : seen) counts.push_back(count);
  EXPECT_LT(chi_square(counts, 2000), chi_square_threshold(23));
  EXPECT_THROW(randperm(-1, gen), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
