// The registered corpus names recipes may use.
#include "recipes/corpora.h"

namespace rota::recipes {

const std::vector<KnownCorpus>& known_corpora() {
  static const std::vector<KnownCorpus> kCorpora = {
      {"tinyshakespeare", false, false, 0, ""},
      {"wikitext-2", false, true, 0, ""},
      {"sst-2", true, true, 2, "accuracy"},
      {"cola", true, true, 2, "mcc"},
  };
  return kCorpora;
}

const KnownCorpus* find_corpus(std::string_view name) {
  for (const KnownCorpus& corpus : known_corpora()) {
    if (corpus.name == name) return &corpus;
  }
  return nullptr;
}

std::vector<std::string> corpus_names() {
  std::vector<std::string> names;
  for (const KnownCorpus& corpus : known_corpora()) names.emplace_back(corpus.name);
  return names;
}

bool is_tsv_source(const Data& data) {
  if (data.has_tsv_dir()) return true;
  if (data.has_files()) return data.files().format() != Files::TEXT;
  const KnownCorpus* corpus = data.has_corpus() ? find_corpus(data.corpus()) : nullptr;
  return corpus != nullptr && corpus->tsv;
}

bool is_text_source(const Data& data) {
  if (data.has_text_dir() || data.has_files() || data.has_prepared()) return true;
  const KnownCorpus* corpus = data.has_corpus() ? find_corpus(data.corpus()) : nullptr;
  return corpus != nullptr && !corpus->tsv;
}

}  // namespace rota::recipes
