// The tokenizer of a prepared directory, checked against the recipe's kind.
#include "app/setup/prepared_setup.h"

#include "app/setup/tokenizer_setup.h"
#include "data/prepared/prepared_corpus.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "framework/base/error.h"
#include "framework/io/log.h"

namespace rota::app {

std::shared_ptr<const data::Tokenizer> prepared_tokenizer(const recipes::Recipe& recipe) {
  const std::string& dir = recipe.data().prepared();
  const data::PreparedCorpus corpus = data::PreparedCorpus::open(dir);
  std::shared_ptr<const data::Tokenizer> tokenizer = corpus.load_tokenizer();
  const recipes::Tokenizer& t = recipe.data().tokenizer();
  if (t.has_kind()) {
    const std::string wanted = data::tokenizer_kind_name(tokenizer_spec_from_recipe(recipe).kind);
    ROTA_CHECK(wanted == tokenizer->kind(),
               "data.tokenizer.kind: {} ({}), but the prepared corpus {} was tokenised with a {} "
               "tokenizer; drop data.tokenizer.kind or prepare the corpus with this kind",
               recipes::Tokenizer::Kind_Name(t.kind()), wanted, dir, tokenizer->kind());
  }
  io::log_info("tokenizer: {} ({} ids) from the prepared corpus {}", tokenizer->kind(),
               tokenizer->vocab_size(), dir);
  return tokenizer;
}

}  // namespace rota::app
