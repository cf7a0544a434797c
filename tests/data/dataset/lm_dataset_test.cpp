// Causal LM windows: shifted targets, full-split evaluation coverage, WikiText-2 token counts.
#include <gtest/gtest.h>

#include <algorithm>

#include <numeric>
#include <tuple>

#include "data/corpus/corpus.h"
#include "data/dataset/lm_dataset.h"
#include "data/loader/batch_loader.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "tests/data/test_files.h"
#include "tests/support/allclose.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

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

// Lanes (stateful training): lane k's windows are consecutive (window g + 1 starts where g
// ends), the lanes do not overlap, every window is full and inside the usable stream, the
// windows of one epoch are lanes × (L / T) with L = (U − (T − 1)) / lanes, batch g read in index
// order is window g of every lane, and an epoch after the first moves all windows by one origin
// in [0, T) drawn from the seed.
TEST(CausalLmDataset, LaneWindowsAreContiguousPerLaneAndDisjoint) {
  const int64_t N = 503, T = 7, lanes = 4;
  CausalLmDataset dataset(positional_stream(N), T, WindowMode::kTrain, /*pad_id=*/-7);
  dataset.set_sampling({/*random_offsets=*/false, /*seed=*/9, /*lanes=*/lanes});
  const int64_t usable = N - 1, lane_length = (usable - (T - 1)) / lanes;  // 124
  const int64_t per_lane = lane_length / T;                                // 17
  ASSERT_EQ(dataset.size(), lanes * per_lane);
  std::vector<int64_t> origins;
  for (int64_t epoch : {0, 1, 2, 3}) {
    std::vector<int> covered(usable, 0);
    const int64_t origin = dataset.window_start(0, epoch);
    origins.push_back(origin);
    EXPECT_GE(origin, 0);
    EXPECT_LT(origin, T);
    for (int64_t w = 0; w < dataset.size(); ++w) {
      const int64_t lane = w % lanes, g = w / lanes;
      EXPECT_EQ(dataset.lane_step(w), g);
      const int64_t start = dataset.window_start(w, epoch);
      EXPECT_EQ(start, origin + lane * lane_length + g * T) << "window " << w;
      if (g > 0) {
        EXPECT_EQ(start, dataset.window_start(w - lanes, epoch) + T);
      }
      ASSERT_LE(start + T, usable);
      for (int64_t t = start; t < start + T; ++t) ++covered[t];
      const std::vector<int64_t> one = {w};
      const LmBatch batch = dataset.batch(one, epoch);
      EXPECT_EQ(batch.tokens.at({0, 0}), 1000 + start);
      EXPECT_EQ(batch.targets.at({0, T - 1}), 1000 + start + T);
    }
    EXPECT_EQ(*std::max_element(covered.begin(), covered.end()), 1) << "lanes overlap";
  }
  EXPECT_EQ(origins[0], 0);
  // The origin of later epochs comes from the seed: not all equal, the same for the same seed.
  EXPECT_FALSE(origins[1] == origins[2] && origins[2] == origins[3]);
  CausalLmDataset again(positional_stream(N), T, WindowMode::kTrain, -7);
  again.set_sampling({false, 9, lanes});
  EXPECT_EQ(again.window_start(5, 3), dataset.window_start(5, 3));
  // Read in order by a loader of `lanes` per batch, batch g is window g of lanes 0 … lanes − 1.
  BatchLoader loader(dataset.size(), {/*batch_size=*/lanes, /*shuffle=*/false});
  for (int64_t g = 0; g < per_lane; ++g) {
    const LoaderBatch batch = loader.next();
    for (int64_t k = 0; k < lanes; ++k) {
      EXPECT_EQ(dataset.window_start(batch.indices[k], 0), k * lane_length + g * T);
    }
  }
}

TEST(CausalLmDataset, LanesAreRefusedWithRandomOffsetsOrEvaluationWindows) {
  CausalLmDataset training(positional_stream(50), 5, WindowMode::kTrain, -7);
  EXPECT_THROW(training.set_sampling({true, 1, 2}), Error);
  CausalLmDataset evaluation(positional_stream(50), 5, WindowMode::kEval, -7);
  EXPECT_THROW(evaluation.set_sampling({false, 1, 2}), Error);
  // More lanes than the stream has windows for: no windows (the task refuses it by name).
  training.set_sampling({false, 1, 20});
  EXPECT_EQ(training.size(), 0);
}

// Stateful evaluation lanes: every target after the first token is scored exactly once, lane
// k's batch g continues its batch g − 1, rows of lanes that have ended are padding, and a
// stream shorter than the lanes uses fewer lanes.
TEST(LaneWindows, ScoreEveryTargetOnceInContiguousLanes) {
  for (const auto& [N, T, lanes] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {101, 8, 4}, {100, 8, 3}, {10, 4, 16}, {2, 5, 3}, {65, 8, 2}}) {
    const LaneWindows windows(positional_stream(N), T, lanes, /*pad_id=*/-7);
    const int64_t usable = N - 1;
    const int64_t lane_length = (usable + lanes - 1) / lanes;
    EXPECT_EQ(windows.lane_length(), lane_length);
    EXPECT_EQ(windows.lanes(), (usable + lane_length - 1) / lane_length);
    EXPECT_EQ(windows.batches(), (lane_length + T - 1) / T);
    std::vector<int> scored(N, 0);
    int64_t targets = 0;
    for (int64_t g = 0; g < windows.batches(); ++g) {
      const LmBatch batch = windows.batch(g);
      ASSERT_EQ(batch.tokens.size(0), windows.lanes());
      targets += batch.target_count;
      for (int64_t k = 0; k < windows.lanes(); ++k) {
        for (int64_t t = 0; t < batch.tokens.size(1); ++t) {
          const auto target = static_cast<int64_t>(batch.targets.at({k, t}));
          if (target == kIgnoreIndex) {
            EXPECT_EQ(batch.tokens.at({k, t}), -7);
            EXPECT_EQ(batch.mask.at({k, t}), 0.0);
            continue;
          }
          const int64_t position = k * lane_length + g * T + t;  // where lane k's window g is
          EXPECT_EQ(batch.tokens.at({k, t}), 1000 + position);
          EXPECT_EQ(target, 1000 + position + 1);
          EXPECT_EQ(batch.mask.at({k, t}), 1.0);
          ++scored[position + 1];
        }
      }
    }
    EXPECT_EQ(targets, usable) << N << " " << T << " " << lanes;
    EXPECT_EQ(scored[0], 0);
    for (int64_t i = 1; i < N; ++i) EXPECT_EQ(scored[i], 1) << "token " << i;
    EXPECT_THROW(windows.batch(windows.batches()), Error);
  }
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
          if (w > 0) {
            EXPECT_GE(t + 1, T - S + 1) << "N=" << N << " S=" << S << " w=" << w;
          }
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

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
