// The tokenizer of a prepared directory (data.prepared).
#include "app/setup/prepared_setup.h"

#include "data/prepared/prepared_corpus.h"
#include "framework/io/log.h"

namespace rota::app {

std::shared_ptr<const data::Tokenizer> prepared_tokenizer(const recipes::Recipe& recipe) {
  const std::string& dir = recipe.data().prepared();
  const data::PreparedCorpus corpus = data::PreparedCorpus::open(dir);
  std::shared_ptr<const data::Tokenizer> tokenizer = corpus.load_tokenizer();
  io::log_info("tokenizer: {} ({} ids) from the prepared corpus {}", tokenizer->kind(),
               tokenizer->vocab_size(), dir);
  return tokenizer;
}

}  // namespace rota::app
