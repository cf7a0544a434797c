// Parallel, in-order encoding of a split's line-aligned pieces.
#include "data/prepared/split_encoder.h"

#include <omp.h>

#include <exception>
#include <vector>

namespace rota::data {

int64_t encode_split(const Corpus& corpus, const std::string& split, const Tokenizer& tokenizer,
                     const EncodeOptions& options,
                     const std::function<void(std::span<const int64_t> ids)>& sink) {
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  const size_t batch = static_cast<size_t>(2 * threads);
  std::vector<std::string> pieces;
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
  };
  corpus.for_each_text_piece(split, options.piece_bytes, [&](std::string_view piece) {
    total += static_cast<int64_t>(piece.size());
    pieces.emplace_back(piece);
    if (pieces.size() >= batch) flush();
  });
  if (!pieces.empty()) flush();
  return total;
}

}  // namespace rota::data
