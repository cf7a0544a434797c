// Packed documents: which document each position of a language-model batch belongs to, from the
// separator token that ends every document (data.document_separator).
#pragma once

#include <cstdint>

#include "data/dataset/batch.h"

namespace rota::data {

/// Document ids [B, W] i64 of token rows [B, W]: per row 0 from the first column, one more
/// after each `separator` (a separator belongs to the document it ends).
Tensor document_ids(const Tensor& tokens, int64_t separator);

/// A causal LM batch as packed documents: segment_ids from its tokens, and the target of every
/// separator input (the first token of the next document) set to kIgnoreIndex, target_count
/// updated. A separator is itself still predicted, as its document's end.
void mark_causal_documents(LmBatch& batch, int64_t separator);

/// A masked LM batch as packed documents: segment_ids from the uncorrupted tokens (the target
/// where a position was selected, the input elsewhere), so masking never moves a boundary.
void mark_masked_documents(LmBatch& batch, int64_t separator);

}  // namespace rota::data
