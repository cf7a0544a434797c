// Masked-LM corruption statistics (15 %, 80/10/10), special tokens, determinism, windows.
#include <gtest/gtest.h>

#include <cmath>

#include "data/dataset/mlm_dataset.h"
#include "data/dataset/mlm_masking.h"
#include "data/tokenizer/byte_tokenizer.h"
#include "framework/base/error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

// 256 ordinary ids (bytes) and four special tokens.
const ByteTokenizer& tokenizer() {
  static const ByteTokenizer instance(
      {SpecialToken::kPad, SpecialToken::kMask, SpecialToken::kCls, SpecialToken::kEos});
  return instance;
}

// n tokens, about 10 % of them special (<eos>, <cls>, <pad>), the rest random bytes.
std::vector<int64_t> mixed_stream(int64_t n, uint64_t seed) {
  Generator gen(seed);
  const SpecialTokens& specials = tokenizer().specials();
  const int64_t special_ids[] = {specials.id(SpecialToken::kEos), specials.id(SpecialToken::kCls),
                                 specials.id(SpecialToken::kPad)};
  std::vector<int64_t> tokens(n);
  for (int64_t& id : tokens) {
    id = gen.next_below(10) == 0 ? special_ids[gen.next_below(3)]
                                 : static_cast<int64_t>(gen.next_below(256));
  }
  return tokens;
}

// |observed - expected| <= 5 standard deviations of a Binomial(trials, p) count. For a correct
// implementation a 5-sigma miss has probability < 1e-6 (normal approximation, counts in the
// thousands here), so the check is not flaky; a wrong rate (e.g. 0.14 instead of 0.15 over
// 180k trials, 30 sigma away) cannot pass it.
void expect_binomial(int64_t observed, int64_t trials, double p, const char* what) {
  const double mean = trials * p;
  const double sigma = std::sqrt(trials * p * (1 - p));
  EXPECT_LE(std::fabs(observed - mean), 5 * sigma)
      << what << ": observed " << observed << ", expected " << mean << " +- " << 5 * sigma;
}

TEST(MlmMasker, SelectionRateAnd80_10_10Split) {
  const MlmMasker masker(tokenizer());
  const std::vector<int64_t> original = mixed_stream(200000, 1);
  std::vector<int64_t> tokens = original;
  std::vector<int64_t> targets(tokens.size());
  Generator gen(42);
  const int64_t selected = masker.apply(tokens, targets, gen);

  const int64_t mask = tokenizer().specials().id(SpecialToken::kMask);
  int64_t ordinary = 0, counted = 0, masked = 0, replaced = 0, kept = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    const bool special = tokenizer().specials().is_special(original[i]);
    ordinary += !special;
    if (targets[i] == kIgnoreIndex) {
      EXPECT_EQ(tokens[i], original[i]) << "unselected position " << i << " changed";
      continue;
    }
    ASSERT_FALSE(special) << "special token selected at " << i;
    EXPECT_EQ(targets[i], original[i]);
    ++counted;
    if (tokens[i] == mask) {
      ++masked;
    } else if (tokens[i] != original[i]) {
      ++replaced;
      EXPECT_FALSE(tokenizer().specials().is_special(tokens[i])) << "random special token at " << i;
    } else {
      ++kept;
    }
  }
  EXPECT_EQ(counted, selected);
  expect_binomial(selected, ordinary, 0.15, "selected");
  expect_binomial(masked, selected, 0.8, "<mask>");
  // A random replacement equals the original with probability 1/256 and then looks kept.
  const double p_replaced = 0.1 * (1 - 1.0 / 256);
  expect_binomial(replaced, selected, p_replaced, "random");
  expect_binomial(kept, selected, 1 - 0.8 - p_replaced, "unchanged");
}

TEST(MlmMasker, DeterministicPerSeed) {
  const MlmMasker masker(tokenizer());
  const std::vector<int64_t> original = mixed_stream(5000, 2);
  const auto run = [&](uint64_t seed) {
    std::vector<int64_t> tokens = original, targets(original.size());
    Generator gen(seed);
    masker.apply(tokens, targets, gen);
    return std::make_pair(tokens, targets);
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST(MlmMasker, NeedsAMaskTokenAndValidRates) {
  EXPECT_THROW(MlmMasker(ByteTokenizer({SpecialToken::kPad})), Error);
  MlmOptions bad;
  bad.mask_rate = 0.95;
  bad.random_rate = 0.1;
  EXPECT_THROW(MlmMasker(tokenizer(), bad), Error);
}

TEST(MaskedLmDataset, MaskingDependsOnlyOnSeedEpochAndWindow) {
  const int64_t T = 16;
  TokenStream stream = make_token_stream(mixed_stream(40 * T, 3));
  const MaskedLmDataset dataset(stream, T, WindowMode::kTrain, MlmMasker(tokenizer()), /*seed=*/9,
                                padding_id(tokenizer()));
  EXPECT_EQ(dataset.size(), 40);
  const std::vector<int64_t> pair = {7, 3}, single = {7};
  const LmBatch a = dataset.batch(pair, /*epoch=*/2);
  const LmBatch b = dataset.batch(single, /*epoch=*/2);
  const LmBatch c = dataset.batch(single, /*epoch=*/3);
  bool differs_by_epoch = false;
  for (int64_t t = 0; t < T; ++t) {
    EXPECT_EQ(a.tokens.at({0, t}), b.tokens.at({0, t}));
    EXPECT_EQ(a.targets.at({0, t}), b.targets.at({0, t}));
    differs_by_epoch |= b.targets.at({0, t}) != c.targets.at({0, t});
    // Targets hold the original window's tokens.
    if (b.targets.at({0, t}) != kIgnoreIndex) {
      EXPECT_EQ(b.targets.at({0, t}), stream->at(7 * T + t));
    }
    EXPECT_EQ(b.mask.at({0, t}), 1.0);
  }
  EXPECT_TRUE(differs_by_epoch);
}

TEST(MaskedLmDataset, ClsFirstAndPaddedLastEvaluationWindow) {
  const int64_t T = 8;
  const int64_t cls = tokenizer().specials().id(SpecialToken::kCls);
  const int64_t pad = tokenizer().specials().id(SpecialToken::kPad);
  std::vector<int64_t> tokens(17);
  for (int64_t i = 0; i < 17; ++i) tokens[i] = 'a' + i;
  const MaskedLmDataset dataset(make_token_stream(tokens), T, WindowMode::kEval,
                                MlmMasker(tokenizer()), 1, pad, cls);
  EXPECT_EQ(dataset.size(), 3);  // 7 stream tokens per window: 7 + 7 + 3
  // With a full window in the batch the last one is padded to T; alone, the batch is only as
  // wide as it (<cls> + 3 tokens), with the same row.
  const std::vector<int64_t> both = {1, 2};
  const std::vector<int64_t> last = {2};
  const LmBatch padded = dataset.batch(both, 0);
  const LmBatch alone = dataset.batch(last, 0);
  ASSERT_EQ(padded.tokens.size(1), T);
  ASSERT_EQ(alone.tokens.size(1), 4);
  EXPECT_EQ(padded.tokens.at({1, 0}), cls);
  EXPECT_EQ(padded.targets.at({1, 0}), kIgnoreIndex);
  for (int64_t t = 0; t < T; ++t) {
    const bool real = t < 4;  // <cls> + 3 tokens
    EXPECT_EQ(padded.mask.at({1, t}), real ? 1.0 : 0.0);
    if (!real) {
      EXPECT_EQ(padded.tokens.at({1, t}), pad);
      EXPECT_EQ(padded.targets.at({1, t}), kIgnoreIndex);
    } else {
      EXPECT_EQ(alone.tokens.at({0, t}), padded.tokens.at({1, t}));
      EXPECT_EQ(alone.targets.at({0, t}), padded.targets.at({1, t}));
      EXPECT_EQ(alone.mask.at({0, t}), 1.0);
    }
  }
  EXPECT_EQ(MaskedLmDataset(make_token_stream(tokens), T, WindowMode::kTrain,
                            MlmMasker(tokenizer()), 1, pad, cls)
                .size(),
            2);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
