// Tokenising a split in parallel over line-aligned pieces, results handed on in text order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "data/corpus/corpus.h"
#include "data/tokenizer/tokenizer.h"

namespace rota::data {

struct EncodeOptions {
  /// Text per piece (Corpus::for_each_text_piece); a piece is encoded by one thread.
  size_t piece_bytes = size_t{4} << 20;
  /// Threads encoding at once; 0: OpenMP's default.
  int threads = 0;
  /// Documents the source marks (Corpus::for_each_document_piece): after each document's ids
  /// comes document_end_token. The text must never encode to that token itself (an error
  /// quoting the line), so the token marks document ends and nothing else. kNone: no tokens
  /// are added.
  DocumentBoundary documents = DocumentBoundary::kNone;
  int64_t document_end_token = -1;
  /// Called after each piece's ids went to the sink, with the text bytes of that piece.
  std::function<void(size_t text_bytes)> progress;
};

/// Encodes a text split piece by piece: up to 2 × threads pieces are read, encoded in parallel
/// (Tokenizer::encode must be safe to call concurrently, as every Rota tokenizer is), and
/// passed to `sink` in text order. Because tokenizers are line-separable, the concatenated ids
/// equal tokenizer.encode(corpus.read_text(split)), with options.document_end_token after every
/// document when options.documents is set. Memory: the pieces in flight and their ids.
/// Returns the text bytes read.
int64_t encode_split(const Corpus& corpus, const std::string& split, const Tokenizer& tokenizer,
                     const EncodeOptions& options,
                     const std::function<void(std::span<const int64_t> ids)>& sink);

}  // namespace rota::data
