// tokenizer.json documents for Rota's byte, char and word tokenizers.
#include "data/tokenizer/huggingface/hf_export.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "data/tokenizer/huggingface/hf_pre_tokenizer.h"
#include "data/util/utf8.h"

namespace rota::data::hf {

namespace {

using nlohmann::json;

json document() {
  json doc = json::object();
  doc["version"] = "1.0";
  doc["truncation"] = nullptr;
  doc["padding"] = nullptr;
  doc["added_tokens"] = json::array();
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = nullptr;
  doc["post_processor"] = nullptr;
  doc["decoder"] = nullptr;
  return doc;
}

json bpe_model(const json& vocab, const json& unk_token) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", unk_token},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", json::array()}};
}

// Rota never parses special tokens out of text, so they are plain vocabulary entries that no
// merge reaches, not added tokens.
std::string dump(const json& doc) {
  return doc.dump(2, ' ', false, json::error_handler_t::strict) + "\n";
}

}  // namespace

std::string export_byte_tokenizer(const std::vector<SpecialToken>& specials) {
  json vocab = json::object();
  const auto& chars = byte_level_chars();
  for (int b = 0; b < 256; ++b) vocab[chars[b]] = b;
  for (size_t i = 0; i < specials.size(); ++i) vocab[special_token_text(specials[i])] = 256 + i;
  json doc = document();
  doc["pre_tokenizer"] = {{"type", "ByteLevel"},
                          {"add_prefix_space", false},
                          {"trim_offsets", false},
                          {"use_regex", false}};
  doc["decoder"] = {{"type", "ByteLevel"},
                    {"add_prefix_space", false},
                    {"trim_offsets", false},
                    {"use_regex", false}};
  doc["model"] = bpe_model(vocab, nullptr);
  return dump(doc);
}

std::string export_char_tokenizer(const std::vector<std::string>& tokens,
                                  const SpecialTokens& specials) {
  json vocab = json::object();
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& token = tokens[id];
    const bool stray = token.size() == 1 && static_cast<unsigned char>(token[0]) >= 0x80;
    // A stray byte cannot be a JSON string; its placeholder is never produced from text.
    vocab[stray ? fmt::format("<rota stray byte 0x{:02X}>", static_cast<unsigned char>(token[0]))
                : token] = id;
  }
  json doc = document();
  doc["decoder"] = {{"type", "Fuse"}};
  const json unk = specials.has(SpecialToken::kUnk) ? json(special_token_text(SpecialToken::kUnk))
                                                    : json(nullptr);
  doc["model"] = bpe_model(vocab, unk);
  return dump(doc);
}

std::string export_word_tokenizer(const std::vector<std::string>& tokens,
                                  const SpecialTokens& specials) {
  json vocab = json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  json doc = document();
  const std::string eos = special_token_text(SpecialToken::kEos);
  if (specials.has(SpecialToken::kEos)) {
    // Every line ends with <eos>: its '\n', or the end of a last line without one.
    doc["normalizer"] = {
        {"type", "Replace"}, {"pattern", {{"Regex", "\\n?\\z"}}}, {"content", " " + eos + " "}};
  }
  doc["pre_tokenizer"] = {{"type", "Split"},
                          {"pattern", {{"Regex", "[ \\t\\r\\x0B\\x0C]+"}}},
                          {"behavior", "Removed"},
                          {"invert", false}};
  // Words joined by single spaces, <eos> rendered as a line break (as WordTokenizer::decode).
  json decoders = json::array();
  decoders.push_back({{"type", "WordPiece"}, {"prefix", " "}, {"cleanup", false}});
  decoders.push_back({{"type", "Fuse"}});
  if (specials.has(SpecialToken::kEos)) {
    decoders.push_back(
        {{"type", "Replace"}, {"pattern", {{"Regex", " ?" + eos + " ?"}}}, {"content", "\n"}});
  }
  doc["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  doc["model"] = {{"type", "WordLevel"},
                  {"vocab", vocab},
                  {"unk_token", special_token_text(SpecialToken::kUnk)}};
  return dump(doc);
}

}  // namespace rota::data::hf
