// Byte-level tokenizer.
#include "data/tokenizer/byte_tokenizer.h"

#include <fmt/format.h>

#include "data/tokenizer/huggingface/hf_export.h"
#include "data/tokenizer/tokenizer_config.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

ByteTokenizer::ByteTokenizer(const std::vector<SpecialToken>& specials) : order_(specials) {
  for (size_t i = 0; i < order_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      ROTA_CHECK(order_[i] != order_[j], "byte tokenizer: special token {} listed twice",
                 special_token_text(order_[i]));
    }
    specials_.set(order_[i], 256 + static_cast<int64_t>(i));
  }
}

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int64_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int64_t id : ids) {
    check_id(id, "byte tokenizer decode");
    if (id < 256) {
      text.push_back(static_cast<char>(id));
    } else {
      text += special_token_text(order_[id - 256]);
    }
  }
  return text;
}

std::string ByteTokenizer::token_text(int64_t id) const {
  check_id(id, "byte tokenizer token_text");
  if (id >= 256) return special_token_text(order_[id - 256]);
  if (id >= 0x20 && id < 0x7f) return std::string(1, static_cast<char>(id));
  return fmt::format("<0x{:02X}>", id);
}

void ByteTokenizer::save(const std::filesystem::path& dir) const {
  detail::write_config(dir, detail::config_header(*this));
  write_file_atomically(dir / hf::kHuggingFaceExportFile, hf::export_byte_tokenizer(order_));
}

std::unique_ptr<ByteTokenizer> ByteTokenizer::load(const std::filesystem::path& dir) {
  const nlohmann::json config = detail::read_config(dir);
  detail::expect_kind(config, "byte");
  const SpecialTokens specials = detail::special_tokens_from_config(config);
  // Rebuild the id order from the saved ids (256, 257, ...).
  const int64_t count = static_cast<int64_t>(specials.kinds().size());
  std::vector<SpecialToken> order;
  for (int64_t id = 256; id < 256 + count; ++id) {
    const auto kind = specials.kind_of(id);
    ROTA_CHECK(kind.has_value(), "tokenizer: byte tokenizer in {} has no special token with id {}",
               dir.string(), id);
    order.push_back(*kind);
  }
  auto tokenizer = std::make_unique<ByteTokenizer>(order);
  ROTA_CHECK(tokenizer->vocab_size() == detail::integer_field(config, "vocab_size", -1),
             "tokenizer: byte tokenizer in {}: vocab_size does not match its special tokens",
             dir.string());
  return tokenizer;
}

}  // namespace rota::data
