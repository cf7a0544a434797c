// Batch structs produced by the datasets: token ids, targets and padding masks as Tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "data/dataset/token_sequence.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/tensor/tensor.h"

namespace rota::data {

/// Target value of positions that carry no loss (PyTorch's CrossEntropyLoss ignore_index).
inline constexpr int64_t kIgnoreIndex = -100;

/// A token stream shared by the datasets built on it (the encoded split): compact ids in memory
/// or memory-mapped shards of a prepared corpus (data/prepared/).
using TokenStream = std::shared_ptr<const TokenSequence>;
/// The ids in memory, 2 bytes each when all are below 65,536, else 4 (negative ids or ids from
/// 2^32 on are an error).
TokenStream make_token_stream(std::span<const int64_t> tokens);

/// A language-model batch (causal or masked).
struct LmBatch {
  Tensor tokens;   // [B, T] i64: model inputs
  Tensor targets;  // [B, T] i64: the token to predict, kIgnoreIndex where there is none
  Tensor mask;     // [B, T] f32: 1 at real tokens, 0 at padding
  /// Number of targets that are not kIgnoreIndex (the loss is averaged over these).
  int64_t target_count = 0;
  /// Packed documents: [B, T] i64, the document of each position; undefined otherwise
  /// (data/dataset/documents.h).
  Tensor segment_ids;
};

/// A sequence-classification batch.
struct ClassificationBatch {
  Tensor tokens;  // [B, T] i64
  Tensor mask;    // [B, T] f32: 1 at real tokens, 0 at padding
  Tensor labels;  // [B] i64: class ids, kIgnoreIndex for an unlabelled split
};

/// The id written at padding positions: the tokenizer's <pad> when it has one, else 0. It is
/// only a filler: padding is always identified by mask == 0 and target == kIgnoreIndex.
inline int64_t padding_id(const Tokenizer& tokenizer) {
  return tokenizer.specials().has(SpecialToken::kPad) ? tokenizer.specials().id(SpecialToken::kPad)
                                                      : 0;
}

}  // namespace rota::data
