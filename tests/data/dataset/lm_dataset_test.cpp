// Causal LM windows: shifted targets, full-split evaluation coverage, WikiText-2 token counts.
#include <gtest/gtest.h>

#include <algorithm>

#include <numeric>

#include "data/corpus/corpus.h"
#include "data/dataset/lm_dataset.h"
#include "data/loader/batch_loader.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "tests/data/test_files.h"
#include "tests/support/allclose.h"

namespace rota::data {
namespace {

// A stream whose token at position i is 1000 + i, so every id names its position.
TokenStream positional_stream(int64_t n) {
  std::vector<int64_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), int64_t{1000});
  return make_token_stream(std::move(tokens));
}

TEST(CausalLmDataset, TrainingWindowsHaveTargetsShiftedByOne) {
  const int64_t N = 23, T = 5;
  const CausalLmDataset dataset(positional_stream(N), T, WindowMode::kTrain, /*pad_id=*/-7);
  EXPECT_EQ(dataset.size(), (N - 1) / T);  // 4 full windows
  EXPECT_EQ(dataset.target_count(), 4 * T);
  const std::vector<int64_t> indices = {3, 0, 2};
  const LmBatch batch = dataset.batch(indices);
  ASSERT_EQ(batch.tokens.shape(), (Shape{3, T}));
  EXPECT_EQ(batch.tokens.dtype(), DType::kI64);
  EXPECT_EQ(batch.targets.dtype(), DType::kI64);
  EXPECT_EQ(batch.mask.dtype(), DType::kF32);
  EXPECT_EQ(batch.target_count, 3 * T);
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const int64_t position = indices[b] * T + t;
      EXPECT_EQ(batch.tokens.at({b, t}), 1000 + position);
      EXPECT_EQ(batch.targets.at({b, t}), 1000 + position + 1);
      EXPECT_EQ(batch.mask.at({b, t}), 1.0);
    }
  }
  const std::vector<int64_t> bad = {4};
  EXPECT_THROW(dataset.batch(bad), Error);
}

// Random offsets: every window is a full, correctly shifted window starting anywhere in the
// usable stream; the same (seed, epoch, window) gives the same start, other epochs or seeds
// other starts; the starts cover the stream (not only multiples of T) roughly uniformly.
TEST(CausalLmDataset, RandomOffsetWindowsAreFullDeterministicAndUniform) {
  const int64_t N = 1001, T = 10;
  CausalLmDataset dataset(positional_stream(N), T, WindowMode::kTrain, /*pad_id=*/-7);
  EXPECT_FALSE(dataset.sampling().random_offsets);
  dataset.set_sampling({/*random_offsets=*/true, /*seed=*/42});
  ASSERT_EQ(dataset.size(), (N - 1) / T);  // as many windows per epoch as aligned
  const int64_t last_start = N - 1 - T;
  std::vector<int64_t> indices(dataset.size());
  std::iota(indices.begin(), indices.end(), int64_t{0});
  std::vector<int64_t> start_histogram(10, 0);
  int64_t unaligned = 0, differs_by_epoch = 0;
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    const LmBatch batch = dataset.batch(indices, epoch);
    EXPECT_EQ(batch.target_count, dataset.size() * T);
    for (int64_t b = 0; b < dataset.size(); ++b) {
      const int64_t start = batch.tokens.at({b, 0}) - 1000;
      ASSERT_GE(start, 0);
      ASSERT_LE(start, last_start);
      EXPECT_EQ(start, dataset.window_start(b, epoch));
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(batch.tokens.at({b, t}), 1000 + start + t);
        EXPECT_EQ(batch.targets.at({b, t}), 1000 + start + t + 1);
        EXPECT_EQ(batch.mask.at({b, t}), 1.0);
      }
      if (start % T != 0) ++unaligned;
      if (start != dataset.window_start(b, epoch + 1)) ++differs_by_epoch;
      ++start_histogram[start * 10 / (last_start + 1)];
    }
  }
  const int64_t draws = 20 * dataset.size();
  EXPECT_GT(unaligned, draws * 8 / 10);          // 9 in 10 starts are not multiples of T
  EXPECT_GT(differs_by_epoch, draws * 9 / 10);   // a fresh start every epoch
  for (const int64_t count : start_histogram) {  // 200 expected per tenth; sd ~13
    EXPECT_GT(count, 140);
    EXPECT_LT(count, 260);
  }
  // Deterministic: another dataset with the same seed agrees; another seed does not.
  CausalLmDataset same(positional_stream(N), T, WindowMode::kTrain, -7);
  same.set_sampling({true, 42});
  CausalLmDataset other(positional_stream(N), T, WindowMode::kTrain, -7);
  other.set_sampling({true, 43});
  int64_t other_differs = 0;
  for (int64_t w = 0; w < dataset.size(); ++w) {
    EXPECT_EQ(same.window_start(w, 3), dataset.window_start(w, 3));
    if (other.window_start(w, 3) != dataset.window_start(w, 3)) ++other_differs;
  }
  EXPECT_GT(other_differs, dataset.size() * 9 / 10);
}

TEST(CausalLmDataset, RandomOffsetsAreRefusedForEvaluationWindows) {
  CausalLmDataset dataset(positional_stream(50), 5, WindowMode::kEval, -7);
  EXPECT_THROW(dataset.set_sampling({true, 1}), Error);
}

// Sliding evaluation windows: every target of the stream is scored exactly once; past the first
// window a scored target has at least T − S tokens of context in its window; S = T is the
// non-overlapping evaluation.
TEST(CausalLmDataset, SlidingWindowsScoreEveryTargetOnceWithAtLeastTMinusSContext) {
  const int64_t T = 8;
  for (const int64_t N : {2, 5, 9, 10, 37, 64, 65}) {
    for (const int64_t S : {1, 3, 8}) {
      const CausalLmDataset dataset(positional_stream(N), T, WindowMode::kEval, -7, S);
      std::vector<int64_t> indices(dataset.size());
      std::iota(indices.begin(), indices.end(), int64_t{0});
      const LmBatch batch = dataset.batch(indices);
      std::vector<int> scored(N, 0);  // by the position of the predicted token
      for (int64_t w = 0; w < dataset.size(); ++w) {
        EXPECT_EQ(batch.tokens.at({w, 0}), 1000 + w * S);  // window w starts at w·S
        for (int64_t t = 0; t < batch.targets.size(1); ++t) {
          const int64_t target = batch.targets.at({w, t});
          if (target == kIgnoreIndex) continue;
          const int64_t predicted = target - 1000;
          EXPECT_EQ(predicted, w * S + t + 1);
          ++scored[predicted];
          if (w > 0) EXPECT_GE(t + 1, T - S + 1) << "N=" << N << " S=" << S << " w=" << w;
        }
      }
      EXPECT_EQ(scored[0], 0);
      for (int64_t i = 1; i < N; ++i)
        EXPECT_EQ(scored[i], 1) << "N=" << N << " S=" << S << " " << i;
      EXPECT_EQ(batch.target_count, N - 1);
      EXPECT_EQ(dataset.target_count(), N - 1);
    }
    // S = T: the non-overlapping windows, batch for batch.
    const CausalLmDataset plain(positional_stream(N), T, WindowMode::kEval, -7);
    const CausalLmDataset full_stride(positional_stream(N), T, WindowMode::kEval, -7, T);
    ASSERT_EQ(plain.size(), full_stride.size());
    std::vector<int64_t> all(plain.size());
    std::iota(all.begin(), all.end(), int64_t{0});
    const LmBatch a = plain.batch(all), b = full_stride.batch(all);
    EXPECT_TRUE(rota::testing::allclose(a.tokens, b.tokens, 0, 0));
    EXPECT_TRUE(rota::testing::allclose(a.targets, b.targets, 0, 0));
    EXPECT_TRUE(rota::testing::allclose(a.mask, b.mask, 0, 0));
  }
  EXPECT_THROW(CausalLmDataset(positional_stream(50), T, WindowMode::kEval, -7, T + 1), Error);
  EXPECT_THROW(CausalLmDataset(positional_stream(50), T, WindowMode::kTrain, -7, 3), Error);
}

TEST(CausalLmDataset, EvaluationScoresEveryTokenAfterTheFirstExactlyOnce) {
  for (const int64_t N : {2, 5, 6, 7, 23, 101}) {
    const int64_t T = 5;
    const CausalLmDataset dataset(positional_stream(N), T, WindowMode::kEval, /*pad_id=*/-7);
    EXPECT_EQ(dataset.size(), (N - 1 + T - 1) / T) << N;
    EXPECT_EQ(dataset.target_count(), N - 1);
    std::vector<int> scored(N, 0);
    int64_t total = 0;
    std::vector<int64_t> all(dataset.size());
    std::iota(all.begin(), all.end(), int64_t{0});
    const LmBatch batch = dataset.batch(all);
    // The batch is as wide as its longest window: T, unless the only window is a short one.
    const int64_t width = batch.tokens.size(1);
    EXPECT_EQ(width, std::min<int64_t>(T, N - 1)) << N;
    for (int64_t b = 0; b < dataset.size(); ++b) {
      for (int64_t t = 0; t < width; ++t) {
        const int64_t target = static_cast<int64_t>(batch.targets.at({b, t}));
        if (target == kIgnoreIndex) {
          EXPECT_EQ(batch.mask.at({b, t}), 0.0);
          EXPECT_EQ(batch.tokens.at({b, t}), -7);
          continue;
        }
        EXPECT_EQ(batch.mask.at({b, t}), 1.0);
        EXPECT_EQ(target, batch.tokens.at({b, t}) + 1);  // the next position
        ++scored[target - 1000];
        ++total;
      }
    }
    EXPECT_EQ(total, N - 1);
    EXPECT_EQ(batch.target_count, N - 1);
    EXPECT_EQ(scored[0], 0);
    for (int64_t i = 1; i < N; ++i) EXPECT_EQ(scored[i], 1) << "N=" << N << " position " << i;
  }
  EXPECT_EQ(CausalLmDataset(positional_stream(1), 4, WindowMode::kEval, 0).size(), 0);
  EXPECT_EQ(CausalLmDataset(positional_stream(5), 4, WindowMode::kTrain, 0).size(), 1);
  EXPECT_EQ(CausalLmDataset(positional_stream(4), 4, WindowMode::kTrain, 0).size(), 0);
  EXPECT_THROW(CausalLmDataset(positional_stream(4), 0, WindowMode::kTrain, 0), Error);
}

// The WikiText-2 counts of ../shared/data/README.md: lines + whitespace tokens + one <eos>
// per line, and the train vocabulary of 33,278 types with <eos>.
TEST(CausalLmDataset, WikiText2TokenCountsAndFullValidationPass) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not present";
  testing::TempDir root;
  const DataOptions options = testing::shared_data_options(shared, root / "cache");
  const Corpus corpus = Corpus::open("wikitext-2", options);
  const auto tokenizer = WordTokenizer::train(corpus.read_text("train"));
  EXPECT_EQ(tokenizer->vocab_size(), 33278);
  EXPECT_EQ(tokenizer->encode(corpus.read_text("train")).size(), 2088628u);
  EXPECT_EQ(tokenizer->encode(corpus.read_text("test")).size(), 245569u);
  std::vector<int64_t> valid = tokenizer->encode(corpus.read_text("valid"));
  ASSERT_EQ(valid.size(), 217646u);
  // Valid and test have no word outside the train vocabulary.
  EXPECT_EQ(std::count(valid.begin(), valid.end(), tokenizer->specials().id(SpecialToken::kUnk)),
            std::count(valid.begin(), valid.end(), tokenizer->find("<unk>")));

  // A full evaluation pass through the loader (in order, last partial batch and window kept).
  const CausalLmDataset dataset(make_token_stream(std::move(valid)), 128, WindowMode::kEval, 0);
  LoaderOptions loader_options;
  loader_options.batch_size = 16;
  loader_options.shuffle = false;
  loader_options.drop_last = false;
  BatchLoader loader(dataset.size(), loader_options);
  int64_t targets = 0;
  for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
    targets += dataset.batch(loader.next().indices).target_count;
  }
  EXPECT_EQ(targets, 217645);
  EXPECT_EQ(dataset.target_count(), 217645);
}

}  // namespace
}  // namespace rota::data
