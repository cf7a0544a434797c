// The token streams of a language-model task: encoded from the corpus text or mapped from a
// prepared directory.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "data/dataset/batch.h"
#include "data/prepared/prepared_corpus.h"

namespace rota::app {

class Task;

/// Each split's ids, made once and kept. With data.prepared the shards are memory-mapped (the
/// directory is opened and its tokenizer checked against the task's on first use); otherwise
/// the split's text is encoded piece by piece in parallel (data::encode_split) into compact ids,
/// the same ids as encoding the whole text.
class LmTokenSource {
 public:
  explicit LmTokenSource(Task& task) : task_(task) {}
  /// The split's ids; throws when the split has fewer than `min_tokens`.
  data::TokenStream split(const std::string& name, int64_t min_tokens = 0);
  /// The data source's name for messages (corpus, directory).
  std::string source_name() const;

 private:
  const data::PreparedCorpus& prepared();

  Task& task_;
  std::optional<data::PreparedCorpus> prepared_;
  std::map<std::string, data::TokenStream> streams_;
};

/// The validation split of a prepared directory ("valid", "validation" or "dev"); throws when
/// it has none.
std::string prepared_validation_split(const std::string& dir);

}  // namespace rota::app
