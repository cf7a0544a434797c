// Packed documents in LM batches: document ids from the separator that ends each document, the
// causal targets that would cross into the next document ignored, masked batches marked from
// their uncorrupted tokens.
#include "data/dataset/documents.h"

#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"

namespace rota::data {
namespace {

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

}  // namespace
}  // namespace rota::data
