// Packed documents: which document each position of a language-model batch belongs to, from the
// separator token that ends every document (data.document_separator).
#pragma once

#include <cstdint>
#include <vector>

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

/// Packed lanes (a stream read window after window with the state carried): each row's
/// position inside its document after a window of input tokens [B, W] (i64), from its position
/// before it. A row whose window holds no separator goes on by W; another is at the number of
/// tokens after its last separator (0 when that is the window's last token: the next window
/// starts a new document).
std::vector<int64_t> document_positions_after(const Tensor& tokens, int64_t separator,
                                              std::vector<int64_t> before);

/// The position inside its document of stream token `at` of a lane starting at `lane_begin`
/// (<= at): the tokens since the last separator before `at`, counted no further back than
/// lane_begin (a lane starts a document). Reads the stream backwards in blocks.
int64_t document_position_at(const TokenSequence& stream, int64_t lane_begin, int64_t at,
                             int64_t separator);

}  // namespace rota::data
