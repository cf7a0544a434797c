// `rota data list` and `rota data fetch` (see data_run.h).
#include "app/run/data_run.h"

#include <cstdio>

#include "app/run/exit_codes.h"
#include "data/corpus/corpus_registry.h"
#include "data/corpus/data_options.h"
#include "data/corpus/locate.h"
#include "recipes/field_path.h"
#include "recipes/recipe_error.h"

namespace rota::app {

int run_data_list() {
  const data::DataOptions options = data::default_data_options();
  std::printf("search path:\n");
  for (const auto& dir : options.search_path) {
    std::printf("  %s (%s)\n", dir.dir.c_str(), dir.origin.c_str());
  }
  std::printf("downloads go to %s%s\n\n", options.cache_dir.c_str(),
              options.allow_download ? "" : " (downloads disabled: ROTA_OFFLINE)");
  for (const data::CorpusInfo& corpus : data::corpus_registry()) {
    std::printf("%s: %s\n", corpus.name.c_str(), corpus.description.c_str());
    if (!corpus.note.empty()) std::printf("  %s\n", corpus.note.c_str());
    for (const data::CorpusFileStatus& file : data::corpus_status(corpus, options)) {
      std::printf("  %-15s %-28s %11lld bytes  %s\n", file.split.c_str(), file.file_name.c_str(),
                  static_cast<long long>(file.bytes),
                  file.path.empty() ? "missing (rota data fetch downloads it)" : file.path.c_str());
      std::printf("  %-15s sha256 %s\n", "", file.sha256.c_str());
    }
  }
  return kExitOk;
}

int run_data_fetch(const std::string& name) {
  if (!data::find_corpus(name)) {
    std::vector<std::string> names;
    for (const data::CorpusInfo& corpus : data::corpus_registry()) names.push_back(corpus.name);
    throw recipes::RecipeError("rota data fetch: unknown corpus '" + name + "'" +
                               recipes::did_you_mean(name, names) +
                               "; registered: " + data::registered_corpus_names());
  }
  for (const auto& path : data::fetch_corpus(name, data::default_data_options())) {
    std::printf("%s\n", path.c_str());
  }
  return kExitOk;
}

}  // namespace rota::app
