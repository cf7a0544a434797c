// Special token names and the id table.
#include "data/tokenizer/special_tokens.h"

#include "framework/base/error.h"

namespace rota::data {

namespace {

constexpr std::array<const char*, kSpecialTokenKinds> kTexts = {"<pad>",  "<unk>", "<bos>", "<eos>",
                                                                "<mask>", "<cls>", "<sep>"};

}  // namespace

const char* special_token_text(SpecialToken kind) {
  return kTexts[static_cast<size_t>(kind)];
}

std::optional<SpecialToken> parse_special_token(std::string_view name) {
  for (int i = 0; i < kSpecialTokenKinds; ++i) {
    const std::string_view text = kTexts[i];
    if (name == text || name == text.substr(1, text.size() - 2))
      return static_cast<SpecialToken>(i);
  }
  return std::nullopt;
}

std::vector<SpecialToken> parse_special_tokens(const std::vector<std::string>& names) {
  std::vector<SpecialToken> kinds;
  for (const std::string& name : names) {
    const auto kind = parse_special_token(name);
    ROTA_CHECK(kind.has_value(),
               "tokenizer: unknown special token '{}' (known: pad, unk, bos, eos, mask, cls, sep)",
               name);
    for (SpecialToken seen : kinds) {
      ROTA_CHECK(seen != *kind, "tokenizer: special token '{}' listed twice", name);
    }
    kinds.push_back(*kind);
  }
  return kinds;
}

void SpecialTokens::set(SpecialToken kind, int64_t id) {
  ROTA_CHECK(id >= 0, "tokenizer: special token {} given negative id {}", special_token_text(kind),
             id);
  ids_[index(kind)] = id;
}

int64_t SpecialTokens::require(SpecialToken kind, std::string_view who) const {
  ROTA_CHECK(has(kind),
             "{}: the tokenizer has no {} token; add \"{}\" to the tokenizer's special tokens", who,
             special_token_text(kind),
             std::string_view(special_token_text(kind))
                 .substr(1, std::string_view(special_token_text(kind)).size() - 2));
  return id(kind);
}

bool SpecialTokens::is_special(int64_t id) const {
  return kind_of(id).has_value();
}

std::optional<SpecialToken> SpecialTokens::kind_of(int64_t id) const {
  if (id < 0) return std::nullopt;
  for (int i = 0; i < kSpecialTokenKinds; ++i) {
    if (ids_[i] == id) return static_cast<SpecialToken>(i);
  }
  return std::nullopt;
}

std::vector<SpecialToken> SpecialTokens::kinds() const {
  std::vector<SpecialToken> present;
  for (int i = 0; i < kSpecialTokenKinds; ++i) {
    if (ids_[i] >= 0) present.push_back(static_cast<SpecialToken>(i));
  }
  return present;
}

}  // namespace rota::data
