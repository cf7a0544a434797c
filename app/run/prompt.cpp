// Prompt encoding for generation (see prompt.h).
#include "app/run/prompt.h"

namespace rota::app {

std::vector<int64_t> encode_prompt(const data::Tokenizer& tokenizer, const std::string& prompt) {
  std::vector<int64_t> ids = tokenizer.encode(prompt);
  const auto& specials = tokenizer.specials();
  if (ids.size() > 1 && specials.has(data::SpecialToken::kEos) &&
      ids.back() == specials.id(data::SpecialToken::kEos)) {
    ids.pop_back();
  }
  return ids;
}

}  // namespace rota::app
