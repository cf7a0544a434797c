// Compact token sequences: widths, window copies across segments, and LM batches bit-identical to
// the same ids held as one int64 vector.
#include "data/dataset/token_sequence.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "data/dataset/batch.h"
#include "data/dataset/lm_dataset.h"
#include "data/dataset/mlm_dataset.h"
#include "data/tokenizer/byte_tokenizer.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

std::vector<int64_t> random_ids(int64_t n, int64_t below, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t& id : ids) id = static_cast<int64_t>(gen() % static_cast<uint64_t>(below));
  return ids;
}

// `ids` cut into segments of these sizes, stored at `width` in memory the sequence owns.
template <typename T>
TokenStream segmented(const std::vector<int64_t>& ids, const std::vector<int64_t>& sizes) {
  auto storage = std::make_shared<std::vector<std::vector<T>>>();
  std::vector<TokenSequence::Segment> segments;
  size_t at = 0;
  for (int64_t size : sizes) {
    storage->emplace_back(ids.begin() + at, ids.begin() + at + size);
    at += static_cast<size_t>(size);
  }
  EXPECT_EQ(at, ids.size());
  for (const auto& s : *storage) segments.push_back({s.data(), static_cast<int64_t>(s.size())});
  const TokenWidth width = sizeof(T) == 2 ? TokenWidth::kU16 : TokenWidth::kU32;
  return std::make_shared<const TokenSequence>(width, segments, storage);
}

TEST(TokenSequence, WidthFollowsTheVocabulary) {
  EXPECT_EQ(token_width_for_vocab(1), TokenWidth::kU16);
  EXPECT_EQ(token_width_for_vocab(65536), TokenWidth::kU16);
  EXPECT_EQ(token_width_for_vocab(65537), TokenWidth::kU32);
  EXPECT_EQ(token_bytes(TokenWidth::kU16), 2);
  EXPECT_EQ(token_bytes(TokenWidth::kU32), 4);
  EXPECT_EQ(parse_token_width(token_width_name(TokenWidth::kU32)), TokenWidth::kU32);
  expect_error([] { parse_token_width("int8"); }, "int8");
}

TEST(TokenSequence, MakeTokenStreamPicksTheNarrowestWidthAndKeepsTheIds) {
  const std::vector<int64_t> small = {0, 1, 65535, 7};
  const TokenStream a = make_token_stream(small);
  EXPECT_EQ(a->width(), TokenWidth::kU16);
  EXPECT_EQ(a->to_vector(), small);
  const std::vector<int64_t> large = {0, 65536, 4294967295, 3};
  const TokenStream b = make_token_stream(large);
  EXPECT_EQ(b->width(), TokenWidth::kU32);
  EXPECT_EQ(b->to_vector(), large);
  expect_error([] { make_token_stream(std::vector<int64_t>{1, -1}); }, "-1");
  expect_error([] { make_token_stream(std::vector<int64_t>{int64_t{1} << 32}); }, "4294967296");
}

TEST(TokenSequence, BuilderFillsFixedChunksAndKeepsEveryId) {
  for (TokenWidth width : {TokenWidth::kU16, TokenWidth::kU32}) {
    const std::vector<int64_t> ids = random_ids(1000, 65536, 4);
    TokenSequenceBuilder builder(width, /*chunk_ids=*/7);
    // Appends of every size: empty, within a chunk, across several chunks.
    size_t at = 0;
    for (size_t n : {0, 3, 4, 1, 20, 0, 100, 872}) {
      builder.append(std::span(ids).subspan(at, n));
      at += n;
      EXPECT_EQ(builder.size(), static_cast<int64_t>(at));
    }
    ASSERT_EQ(at, ids.size());
    const TokenStream seq = builder.finish();
    EXPECT_EQ(seq->width(), width);
    EXPECT_EQ(seq->to_vector(), ids);
    std::vector<int64_t> window(30);
    seq->copy_to(5, 30, window.data());  // crosses five chunk boundaries
    EXPECT_EQ(window, std::vector<int64_t>(ids.begin() + 5, ids.begin() + 35));
    EXPECT_EQ(builder.finish()->size(), 0);
  }
}

TEST(TokenSequence, BuilderRefusesIdsOutsideItsWidth) {
  TokenSequenceBuilder builder(TokenWidth::kU16);
  builder.append(std::vector<int64_t>{1, 2});
  expect_error([&] { builder.append(std::vector<int64_t>{65536}); }, "65536");
}

TEST(TokenSequence, WindowsAcrossSegmentsEqualTheConcatenation) {
  const std::vector<int64_t> ids = random_ids(1000, 70000, 5);
  const std::vector<int64_t> sizes = {1, 0, 333, 7, 400, 259};
  const TokenStream seq = segmented<uint32_t>(ids, sizes);
  ASSERT_EQ(seq->size(), 1000);
  std::mt19937_64 gen(9);
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t start = static_cast<int64_t>(gen() % 1000);
    const int64_t count = static_cast<int64_t>(gen() % (1000 - start + 1));
    std::vector<int64_t> out(static_cast<size_t>(count), -7);
    seq->copy_to(start, count, out.data());
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(out[i], ids[start + i]) << start << "+" << i;
  }
  int64_t one = 0;
  expect_error([&] { seq->copy_to(999, 2, &one); }, "outside [0, 1000)");
  expect_error([&] { seq->copy_to(-1, 1, &one); }, "outside");
}

// With an id bound, every copy checks the ids it reads: one outside the vocabulary throws
// naming the segment, its position there and the id; copies that miss it read as before.
TEST(TokenSequence, ACopyMeetingAnIdOutsideTheBoundNamesTheSegmentAndPosition) {
  std::vector<uint16_t> first = {1, 2, 3, 4};
  std::vector<uint16_t> second = {5, 6, 900, 7};
  std::vector<TokenSequence::Segment> segments = {{first.data(), 4, false, "shard a"},
                                                  {second.data(), 4, false, "shard b"}};
  const TokenSequence seq(TokenWidth::kU16, segments, nullptr, TokenIdCheck{100, "; verify it"});
  std::vector<int64_t> out(8);
  seq.copy_to(0, 6, out.data());
  EXPECT_EQ(out[5], 6);
  expect_error([&] { seq.copy_to(3, 4, out.data()); },
               "data: shard b holds id 900 at position 2, outside the vocabulary [0, 100); "
               "verify it");
  EXPECT_EQ(first_id_at_or_above(second.data(), TokenWidth::kU16, 1, 3, 100), 1);
  EXPECT_EQ(first_id_at_or_above(second.data(), TokenWidth::kU16, 0, 2, 100), -1);
  // Without a bound the ids are copied as they are.
  const TokenSequence unchecked(TokenWidth::kU16, segments, nullptr);
  unchecked.copy_to(3, 4, out.data());
  EXPECT_EQ(out[3], 900);
}

void expect_same_batch(const LmBatch& a, const LmBatch& b) {
  ASSERT_EQ(a.tokens.numel(), b.tokens.numel());
  const size_t n = static_cast<size_t>(a.tokens.numel());
  EXPECT_EQ(std::memcmp(a.tokens.data<int64_t>(), b.tokens.data<int64_t>(), n * 8), 0);
  EXPECT_EQ(std::memcmp(a.targets.data<int64_t>(), b.targets.data<int64_t>(), n * 8), 0);
  EXPECT_EQ(std::memcmp(a.mask.data<float>(), b.mask.data<float>(), n * 4), 0);
  EXPECT_EQ(a.target_count, b.target_count);
}

TEST(TokenSequence, LmBatchesAreBitIdenticalToAnInt64Reference) {
  // The reference is built by hand from the int64 ids (causal: inputs ids[wT + t], targets
  // ids[wT + t + 1]); segmented u16 storage must give exactly those rows.
  const int64_t T = 16;
  const std::vector<int64_t> ids = random_ids(16 * 20 + 5, 256, 3);
  const TokenStream seq = segmented<uint16_t>(ids, {50, 17, 16, 200, 42});
  const CausalLmDataset causal(seq, T, WindowMode::kEval, /*pad_id=*/0);
  ASSERT_EQ(causal.size(), 21);
  std::vector<int64_t> all(21);
  for (int64_t w = 0; w < 21; ++w) all[w] = w;
  const LmBatch batch = causal.batch(all);
  for (int64_t w = 0; w < 21; ++w) {
    for (int64_t t = 0; t < T; ++t) {
      const bool real = w * T + t + 1 < static_cast<int64_t>(ids.size());
      EXPECT_EQ(batch.tokens.at({w, t}), real ? ids[w * T + t] : 0);
      EXPECT_EQ(batch.targets.at({w, t}), real ? ids[w * T + t + 1] : kIgnoreIndex);
    }
  }
  // Masked LM (with <cls>): the same batches from one in-memory vector and from segments.
  const ByteTokenizer tokenizer({SpecialToken::kPad, SpecialToken::kMask, SpecialToken::kCls});
  const MlmMasker masker(tokenizer, MlmOptions{});
  const MaskedLmDataset a(make_token_stream(ids), T, WindowMode::kEval, masker, 11, 256, 258);
  const MaskedLmDataset b(segmented<uint32_t>(ids, {100, 1, 224}), T, WindowMode::kEval, masker, 11,
                          256, 258);
  ASSERT_EQ(a.size(), b.size());
  std::vector<int64_t> windows(static_cast<size_t>(a.size()));
  for (int64_t w = 0; w < a.size(); ++w) windows[w] = a.size() - 1 - w;
  for (int64_t epoch : {0, 3}) expect_same_batch(a.batch(windows, epoch), b.batch(windows, epoch));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
