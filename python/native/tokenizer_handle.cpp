// The token → id lookup of a bound tokenizer (see tokenizer_handle.h).
#include "python/native/tokenizer_handle.h"

namespace rota::python {

TokenizerHandle::TokenizerHandle(std::shared_ptr<const data::Tokenizer> tokenizer)
    : tokenizer_(std::move(tokenizer)) {}

std::optional<int64_t> TokenizerHandle::token_to_id(const std::string& token) const {
  std::call_once(built_, [&] {
    for (int64_t id = 0; id < tokenizer_->vocab_size(); ++id) {
      ids_.emplace(tokenizer_->token_text(id), id);  // the first id of a repeated text wins
    }
  });
  const auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace rota::python
