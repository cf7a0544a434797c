// `rota data prepare`: tokenise every split of a text corpus once into a prepared directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "data/corpus/corpus.h"
#include "data/prepared/manifest.h"
#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// Where prepare_corpus is: text bytes tokenised so far out of all splits' bytes.
struct PrepareProgress {
  std::string split;
  int64_t done_bytes = 0;
  int64_t total_bytes = 0;
};

struct PrepareOptions {
  std::filesystem::path out;
  /// Largest shard file, in bytes (rounded down to whole ids).
  int64_t shard_bytes = int64_t{256} << 20;
  /// Encoding threads (0: OpenMP's default) and text per piece (see encode_split).
  int threads = 0;
  size_t piece_bytes = size_t{4} << 20;
  /// Documents the source marks, each followed by document_end_token (EncodeOptions); the
  /// manifest records both.
  DocumentBoundary documents = DocumentBoundary::kNone;
  int64_t document_end_token = -1;
  /// Replace an existing non-empty `out` (else it is an error).
  bool force = false;
  /// Called after every piece (from the calling thread).
  std::function<void(const PrepareProgress&)> progress;
};

/// Tokenises every split of a text corpus (train, valid, test, those it has) with `tokenizer`
/// into shards of ids (uint16 when the vocabulary fits, else uint32), saves the tokenizer in
/// `out/tokenizer/` and writes `out/manifest.json`. Everything is written into the sibling
/// directory `<out>.tmp.<pid>` and renamed to `out` only when complete (an interrupted run
/// leaves no `out`; a failed one removes its temporary directory). `out` may be missing or an
/// empty directory; a non-empty one is refused unless options.force. Returns the manifest.
PreparedManifest prepare_corpus(const Corpus& corpus, const Tokenizer& tokenizer,
                                const PrepareOptions& options);

}  // namespace rota::data
