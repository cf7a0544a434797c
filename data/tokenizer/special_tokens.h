// Special tokens (<pad>, <unk>, <bos>, <eos>, <mask>, <cls>, <sep>) and the ids a tokenizer gives
// them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data {

/// The special tokens Rota knows. A tokenizer has any subset of them; their ids always come
/// from the tokenizer (SpecialTokens), never from constants.
enum class SpecialToken { kPad, kUnk, kBos, kEos, kMask, kCls, kSep };
inline constexpr int kSpecialTokenKinds = 7;

/// The token's text: "<pad>", "<unk>", "<bos>", "<eos>", "<mask>", "<cls>", "<sep>".
const char* special_token_text(SpecialToken kind);
/// Parses "pad" or "<pad>" (etc.); nullopt for anything else.
std::optional<SpecialToken> parse_special_token(std::string_view name);
/// Parses a list of names; throws rota::Error naming the bad entry and the valid names.
std::vector<SpecialToken> parse_special_tokens(const std::vector<std::string>& names);

/// Which special tokens a tokenizer has and their ids.
class SpecialTokens {
 public:
  void set(SpecialToken kind, int64_t id);
  bool has(SpecialToken kind) const { return ids_[index(kind)] >= 0; }
  /// The id, or -1 when the tokenizer has no such token.
  int64_t id(SpecialToken kind) const { return ids_[index(kind)]; }
  /// The id; throws rota::Error "<who>: the tokenizer has no <mask> token; ..." when absent.
  int64_t require(SpecialToken kind, std::string_view who) const;
  /// True when id is the id of one of the special tokens.
  bool is_special(int64_t id) const;
  /// Which special token id is, if any.
  std::optional<SpecialToken> kind_of(int64_t id) const;
  /// The special tokens present, in SpecialToken order.
  std::vector<SpecialToken> kinds() const;
  bool operator==(const SpecialTokens& other) const = default;

 private:
  static size_t index(SpecialToken kind) { return static_cast<size_t>(kind); }
  std::array<int64_t, kSpecialTokenKinds> ids_{-1, -1, -1, -1, -1, -1, -1};
};

}  // namespace rota::data
