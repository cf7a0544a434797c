// The registered corpus names recipes may use, with what validation needs to know about each.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// A corpus of the data registry (data/), as far as recipe validation is concerned. Keep this
/// table in step with the registry's names.
struct KnownCorpus {
  std::string_view name;
  bool tsv;                 // labelled GLUE-style TSV (classification) rather than running text
  bool has_valid_split;     // ships its own validation file
  int num_classes;          // TSV corpora: number of label values; 0 for text
  std::string_view metric;  // TSV corpora: the GLUE metric ("accuracy" or "mcc")
};

/// The registered corpora: tinyshakespeare, wikitext-2, sst-2, cola.
const std::vector<KnownCorpus>& known_corpora();

/// The entry for `name`, or nullptr.
const KnownCorpus* find_corpus(std::string_view name);

/// Names of every registered corpus, for messages.
std::vector<std::string> corpus_names();

/// True when the data source can be labelled examples (tsv_dir, a registered TSV corpus, or
/// data.files in a format other than TEXT).
bool is_tsv_source(const Data& data);

/// True when the data source can be running text (text_dir, a registered text corpus, or
/// data.files: any format gives text).
bool is_text_source(const Data& data);

}  // namespace rota::recipes
