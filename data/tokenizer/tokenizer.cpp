// Tokenizer id checks and load_tokenizer (dispatch on the saved kind).
#include "data/tokenizer/tokenizer.h"

#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/char_tokenizer.h"
#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/tokenizer_config.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

void Tokenizer::check_id(int64_t id, const char* who) const {
  ROTA_CHECK(id >= 0 && id < vocab_size(), "{}: token id {} outside the vocabulary [0, {})", who,
             id, vocab_size());
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir) {
  // A Hugging Face tokenizer saves its own tokenizer.json (no Rota format tag).
  const std::filesystem::path file = dir / kTokenizerConfigFile;
  if (std::filesystem::is_regular_file(file)) {
    std::string text = read_file(file);
    if (is_huggingface_tokenizer_json(text))
      return HuggingFaceTokenizer::from_json(std::move(text), file.string());
  }
  // The loaders read fields with nlohmann's checked accessors: a field missing or of the wrong
  // type (a string where a number belongs) throws json::exception, reported as a bad file.
  try {
    const std::string kind = detail::read_config(dir).at("kind").get<std::string>();
    if (kind == "byte") return ByteTokenizer::load(dir);
    if (kind == "char") return CharTokenizer::load(dir);
    if (kind == "word") return WordTokenizer::load(dir);
    if (kind == "sentencepiece") return SentencePieceTokenizer::load(dir);
    fail("tokenizer: {} has unknown kind '{}' (known: byte, char, word, sentencepiece)",
         file.string(), kind);
  } catch (const nlohmann::json::exception& e) {
    fail("tokenizer: {}: a field is missing or malformed: {}", file.string(), library_detail(e));
  }
}

}  // namespace rota::data
