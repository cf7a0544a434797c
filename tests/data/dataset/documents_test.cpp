// Packed documents in LM batches: document ids from the separator that ends each document, the
// causal targets that would cross into the next document ignored, masked batches marked from
// their uncorrupted tokens.
#include "data/dataset/documents.h"

#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

constexpr int64_t kSep = 9;

Tensor ids(const std::vector<double>& values, int64_t rows) {
  return tensor_from(values, {rows, static_cast<int64_t>(values.size()) / rows}, DType::kI64);
}

TEST(PackedDocuments, DocumentIdsCountTheSeparatorsBefore) {
  // Row 0: [1 2 9 | 3 9 | 9 | 4]; row 1: no separator; a separator ends its own document.
  const Tensor tokens = ids({1, 2, 9, 3, 9, 9, 4, 5, 6, 7, 8, 1, 2, 3}, 2);
  EXPECT_EQ(document_ids(tokens, kSep).to_double_vector(),
            (std::vector<double>{0, 0, 0, 1, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_THROW(document_ids(zeros({2, 3}), kSep), Error);  // f32 tokens
}

TEST(PackedDocuments, CausalTargetsNeverCrossIntoTheNextDocument) {
  LmBatch batch;
  batch.tokens = ids({1, 9, 3, 9, 4, 5}, 1);
  batch.targets = ids({9, 3, 9, 4, 5, kIgnoreIndex}, 1);  // the last position is padding
  batch.target_count = 5;
  mark_causal_documents(batch, kSep);
  // The separators predict nothing; the tokens before them still predict them.
  EXPECT_EQ(batch.targets.to_double_vector(),
            (std::vector<double>{9, kIgnoreIndex, 9, kIgnoreIndex, 5, kIgnoreIndex}));
  EXPECT_EQ(batch.target_count, 3);
  EXPECT_EQ(batch.segment_ids.to_double_vector(), (std::vector<double>{0, 0, 1, 1, 2, 2}));
}

TEST(PackedDocuments, MaskedBatchesTakeTheirDocumentsFromTheUncorruptedTokens) {
  LmBatch batch;
  // Position 1 (a separator) was masked to 0, position 3 replaced by a random separator.
  batch.tokens = ids({1, 0, 3, 9, 4}, 1);
  batch.targets = ids({kIgnoreIndex, 9, kIgnoreIndex, 2, kIgnoreIndex}, 1);
  mark_masked_documents(batch, kSep);
  EXPECT_EQ(batch.segment_ids.to_double_vector(), (std::vector<double>{0, 0, 1, 1, 1}));
  // The batch itself is unchanged.
  EXPECT_EQ(batch.tokens.to_double_vector(), (std::vector<double>{1, 0, 3, 9, 4}));
}

TEST(PackedLanes, DocumentPositionsAfterAWindow) {
  // Row 0 ends with a separator (the next window starts a document); row 1 has none (it goes
  // on by the width); row 2's last separator leaves two tokens of a new document.
  const Tensor tokens = ids({1, 2, 3, 4, 9, 5, 6, 7, 8, 1, 9, 1, 9, 5, 2}, 3);
  EXPECT_EQ(document_positions_after(tokens, kSep, {6, 11, 3}), (std::vector<int64_t>{0, 16, 2}));
  EXPECT_THROW(document_positions_after(tokens, kSep, {0, 0}), Error);  // one per row
}

// document_position_at against a plain count over the stream, at every token of lanes that
// start at several places, across block boundaries of the backwards read.
TEST(PackedLanes, DocumentPositionAtCountsBackToTheSeparatorOrTheLaneStart) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < 10000; ++i) values.push_back(i % 997 == 0 || i % 4999 == 7 ? kSep : 1);
  TokenSequenceBuilder builder(TokenWidth::kU16);
  builder.append(values);
  const TokenStream stream = builder.finish();
  for (int64_t lane_begin : {0, 3, 4500, 9990}) {
    for (int64_t at = lane_begin; at <= 10000; at += (at < lane_begin + 20 ? 1 : 37)) {
      int64_t expected = 0;
      while (at - expected > lane_begin && values[at - expected - 1] != kSep) ++expected;
      ASSERT_EQ(document_position_at(*stream, lane_begin, at, kSep), expected)
          << lane_begin << " " << at;
    }
  }
  EXPECT_THROW(document_position_at(*stream, 5, 4, kSep), Error);
  EXPECT_THROW(document_position_at(*stream, 0, 10001, kSep), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
