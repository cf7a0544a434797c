// A tokenizer as Python sees it: Rota's tokenizer plus the token → id lookup it lacks.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "data/tokenizer/tokenizer.h"

namespace rota::python {

/// Shares the tokenizer (with the run that owns it, or alone for rota.load_tokenizer).
class TokenizerHandle {
 public:
  explicit TokenizerHandle(std::shared_ptr<const data::Tokenizer> tokenizer);

  const data::Tokenizer& tokenizer() const { return *tokenizer_; }
  /// The id whose token_text is `token`, or nothing (built on first use from every id).
  std::optional<int64_t> token_to_id(const std::string& token) const;

 private:
  std::shared_ptr<const data::Tokenizer> tokenizer_;
  mutable std::once_flag built_;
  mutable std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace rota::python
