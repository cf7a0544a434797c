// Character-level tokenizer.
#include "data/tokenizer/char_tokenizer.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "data/tokenizer/huggingface/hf_export.h"
#include "data/tokenizer/tokenizer_config.h"
#include "data/util/utf8.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

// tokenizer.json stores each character as an integer: its code point when it is well-formed
// UTF-8, or kStrayByteBase + byte for a stray byte (JSON strings must be valid UTF-8).
constexpr int64_t kStrayByteBase = 0x110000;

int64_t character_to_number(std::string_view unit) {
  const auto byte = [&](size_t i) {
    return static_cast<int64_t>(static_cast<unsigned char>(unit[i]));
  };
  if (unit.size() == 1) return byte(0) < 0x80 ? byte(0) : kStrayByteBase + byte(0);
  if (unit.size() == 2) return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
  if (unit.size() == 3)
    return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
  return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
         (byte(3) & 0x3F);
}

std::string number_to_character(int64_t number) {
  ROTA_CHECK(number >= 0 && number < kStrayByteBase + 256 && !(number >= 0xD800 && number < 0xE000),
             "char tokenizer: invalid character number {} in tokenizer.json", number);
  std::string unit;
  if (number >= kStrayByteBase) {
    unit.push_back(static_cast<char>(number - kStrayByteBase));
  } else if (number < 0x80) {
    unit.push_back(static_cast<char>(number));
  } else if (number < 0x800) {
    unit.push_back(static_cast<char>(0xC0 | (number >> 6)));
    unit.push_back(static_cast<char>(0x80 | (number & 0x3F)));
  } else if (number < 0x10000) {
    unit.push_back(static_cast<char>(0xE0 | (number >> 12)));
    unit.push_back(static_cast<char>(0x80 | ((number >> 6) & 0x3F)));
    unit.push_back(static_cast<char>(0x80 | (number & 0x3F)));
  } else {
    unit.push_back(static_cast<char>(0xF0 | (number >> 18)));
    unit.push_back(static_cast<char>(0x80 | ((number >> 12) & 0x3F)));
    unit.push_back(static_cast<char>(0x80 | ((number >> 6) & 0x3F)));
    unit.push_back(static_cast<char>(0x80 | (number & 0x3F)));
  }
  return unit;
}

std::string describe_character(std::string_view unit) {
  const int64_t number = character_to_number(unit);
  if (number >= kStrayByteBase) return fmt::format("byte 0x{:02X}", number - kStrayByteBase);
  return fmt::format("U+{:04X}", number);
}

}  // namespace

CharTokenizer::CharTokenizer(const std::vector<SpecialToken>& specials,
                             std::vector<std::string> characters) {
  single_byte_.fill(-1);
  for (SpecialToken kind : specials) {
    ROTA_CHECK(!specials_.has(kind), "char tokenizer: special token {} listed twice",
               special_token_text(kind));
    specials_.set(kind, static_cast<int64_t>(tokens_.size()));
    tokens_.push_back(special_token_text(kind));
  }
  for (std::string& character : characters) {
    const int64_t id = static_cast<int64_t>(tokens_.size());
    const bool fresh = character.size() == 1
                           ? single_byte_[static_cast<unsigned char>(character[0])] < 0
                           : multi_byte_.emplace(character, id).second;
    ROTA_CHECK(fresh, "char tokenizer: character {} appears twice in the vocabulary",
               describe_character(character));
    if (character.size() == 1) single_byte_[static_cast<unsigned char>(character[0])] = id;
    tokens_.push_back(std::move(character));
  }
}

std::unique_ptr<CharTokenizer> CharTokenizer::train(std::string_view text,
                                                    const std::vector<SpecialToken>& specials) {
  std::array<bool, 256> seen_byte{};
  std::set<std::string, std::less<>> longer;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_unit_length(text, pos);
    if (length == 1) {
      seen_byte[static_cast<unsigned char>(text[pos])] = true;
    } else if (!longer.contains(text.substr(pos, length))) {
      longer.emplace(text.substr(pos, length));
    }
    pos += length;
  }
  std::vector<std::string> characters;
  for (int b = 0; b < 256; ++b) {
    if (seen_byte[b]) characters.emplace_back(1, static_cast<char>(b));
  }
  characters.insert(characters.end(), longer.begin(), longer.end());
  // Code point order (stray bytes sort after U+10FFFF).
  std::stable_sort(characters.begin(), characters.end(), [](const auto& a, const auto& b) {
    return character_to_number(a) < character_to_number(b);
  });
  return std::unique_ptr<CharTokenizer>(new CharTokenizer(specials, std::move(characters)));
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_unit_length(text, pos);
    int64_t id = -1;
    if (length == 1) {
      id = single_byte_[static_cast<unsigned char>(text[pos])];
    } else if (auto it = multi_byte_.find(text.substr(pos, length)); it != multi_byte_.end()) {
      id = it->second;
    }
    if (id < 0) {
      ROTA_CHECK(specials_.has(SpecialToken::kUnk),
                 "char tokenizer: character {} at byte {} is not in the vocabulary (built from the "
                 "training text) and the tokenizer has no <unk>",
                 describe_character(text.substr(pos, length)), pos);
      id = specials_.id(SpecialToken::kUnk);
    }
    ids.push_back(id);
    pos += length;
  }
  return ids;
}

std::string CharTokenizer::decode(std::span<const int64_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int64_t id : ids) {
    check_id(id, "char tokenizer decode");
    text += tokens_[id];
  }
  return text;
}

std::string CharTokenizer::token_text(int64_t id) const {
  check_id(id, "char tokenizer token_text");
  if (specials_.is_special(id)) return tokens_[id];
  const std::string& unit = tokens_[id];
  const int64_t number = character_to_number(unit);
  if (number >= kStrayByteBase) return fmt::format("<0x{:02X}>", number - kStrayByteBase);
  if (number < 0x20 || number == 0x7f) return fmt::format("<0x{:02X}>", number);
  return unit;
}

void CharTokenizer::save(const std::filesystem::path& dir) const {
  nlohmann::json config = detail::config_header(*this);
  nlohmann::json characters = nlohmann::json::array();
  for (size_t id = 0; id < tokens_.size(); ++id) {
    if (!specials_.is_special(static_cast<int64_t>(id)))
      characters.push_back(character_to_number(tokens_[id]));
  }
  config["characters"] = characters;
  config["characters_note"] =
      "code points in id order after the special tokens; 1114112+b is stray byte b";
  detail::write_config(dir, config);
  write_file_atomically(dir / hf::kHuggingFaceExportFile,
                        hf::export_char_tokenizer(tokens_, specials_));
}

std::unique_ptr<CharTokenizer> CharTokenizer::load(const std::filesystem::path& dir) {
  const nlohmann::json config = detail::read_config(dir);
  detail::expect_kind(config, "char");
  const SpecialTokens saved = detail::special_tokens_from_config(config);
  const size_t special_count = saved.kinds().size();
  std::vector<SpecialToken> specials;
  for (size_t id = 0; id < special_count; ++id) {
    const auto kind = saved.kind_of(static_cast<int64_t>(id));
    ROTA_CHECK(kind.has_value(),
               "tokenizer: char tokenizer in {}: special tokens must have ids 0..{}", dir.string(),
               special_count - 1);
    specials.push_back(*kind);
  }
  std::vector<std::string> characters;
  for (const auto& number : config.at("characters")) {
    characters.push_back(number_to_character(detail::integer_value(number, "a character")));
  }
  auto tokenizer =
      std::unique_ptr<CharTokenizer>(new CharTokenizer(specials, std::move(characters)));
  ROTA_CHECK(tokenizer->vocab_size() == detail::integer_field(config, "vocab_size", -1),
             "tokenizer: char tokenizer in {}: vocab_size does not match its characters",
             dir.string());
  return tokenizer;
}

}  // namespace rota::data
