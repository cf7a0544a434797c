// Parallel, in-order encoding of a split's line-aligned pieces.
#include "data/prepared/split_encoder.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "data/tokenizer/huggingface/hf_text.h"
#include "framework/base/error.h"

namespace rota::data {
namespace {

// The error for a piece whose text encodes to the document end token: names the first line
// that does.
[[noreturn]] void refuse_separator_in_text(const Tokenizer& tokenizer, const std::string& split,
                                           std::string_view piece, int64_t token) {
  std::string_view line = piece;
  for (size_t at = 0; at < piece.size();) {
    const size_t end = std::min(piece.find('\n', at), piece.size() - 1) + 1;
    const std::string_view candidate = piece.substr(at, end - at);
    const std::vector<int64_t> ids = tokenizer.encode(candidate);
    if (std::find(ids.begin(), ids.end(), token) != ids.end()) {
      line = candidate;
      break;
    }
    at = end;
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.size() > 120) line = line.substr(0, 120);
  fail(
      "data: the {} split's text itself encodes to the document separator (token {}, {}), in "
      "the line \"{}\"; with data.documents the data source ends the documents, so the "
      "separator must be a token the text never gives: choose another data.document_separator "
      "or leave it unset (docs/long-context.md, \"Packed documents\")",
      split, token, tokenizer.token_text(token), hf::to_valid_utf8(line));
}

}  // namespace

int64_t encode_split(const Corpus& corpus, const std::string& split, const Tokenizer& tokenizer,
                     const EncodeOptions& options,
                     const std::function<void(std::span<const int64_t> ids)>& sink) {
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  const size_t batch = static_cast<size_t>(2 * threads);
  const bool marks_documents = options.documents != DocumentBoundary::kNone;
  ROTA_CHECK(!marks_documents || (options.document_end_token >= 0 &&
                                  options.document_end_token < tokenizer.vocab_size()),
             "data: documents ({}) need a document end token inside the vocabulary, got {}",
             document_boundary_name(options.documents), options.document_end_token);
  std::vector<std::string> pieces;
  std::vector<char> ends_document;
  std::vector<std::vector<int64_t>> ids;
  int64_t total = 0;
  auto flush = [&] {
    const int64_t n = static_cast<int64_t>(pieces.size());
    ids.assign(pieces.size(), {});
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t i = 0; i < n; ++i) {
      try {
        ids[i] = tokenizer.encode(pieces[i]);
        if (marks_documents &&
            std::find(ids[i].begin(), ids[i].end(), options.document_end_token) != ids[i].end())
          refuse_separator_in_text(tokenizer, split, pieces[i], options.document_end_token);
        if (ends_document[i]) ids[i].push_back(options.document_end_token);
      } catch (...) {
#pragma omp critical(rota_encode_split_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    for (size_t i = 0; i < pieces.size(); ++i) {
      sink(ids[i]);
      if (options.progress) options.progress(pieces[i].size());
    }
    pieces.clear();
    ends_document.clear();
  };
  corpus.for_each_document_piece(split, options.piece_bytes, options.documents,
                                 [&](std::string_view piece, bool ends) {
                                   total += static_cast<int64_t>(piece.size());
                                   pieces.emplace_back(piece);
                                   ends_document.push_back(ends ? 1 : 0);
                                   if (pieces.size() >= batch) flush();
                                 });
  if (!pieces.empty()) flush();
  return total;
}

}  // namespace rota::data
