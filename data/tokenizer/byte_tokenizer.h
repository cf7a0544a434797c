// Byte-level tokenizer: ids 0..255 are the bytes, special tokens follow from 256.
#pragma once

#include <memory>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// Encodes any byte string losslessly (UTF-8 or not): decode(encode(x)) == x byte for byte.
/// Needs no training. Vocabulary = 256 + the special tokens, which get ids 256, 257, ... in
/// the order given.
class ByteTokenizer final : public Tokenizer {
 public:
  explicit ByteTokenizer(const std::vector<SpecialToken>& specials = {});
  static std::unique_ptr<ByteTokenizer> load(const std::filesystem::path& dir);

  std::string kind() const override { return "byte"; }
  int64_t vocab_size() const override { return 256 + static_cast<int64_t>(order_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  std::string token_text(int64_t id) const override;
  void save(const std::filesystem::path& dir) const override;

 private:
  std::vector<SpecialToken> order_;  // special tokens by id - 256
};

}  // namespace rota::data
