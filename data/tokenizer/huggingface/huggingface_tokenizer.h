// A Hugging Face tokenizer.json as a Rota Tokenizer (models BPE, WordPiece, WordLevel, Unigram
// with their normalizers, pre-tokenizers, added tokens and decoders).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace rota::data {

namespace hf {
class Normalizer;
class PreTokenizer;
class Model;
class Decoder;
class AddedTokens;
}  // namespace hf

/// encode(text) is the reference's encode(line, add_special_tokens=false) applied to each line
/// of text (every line with its '\n'; the last may lack it), concatenated: encoding is
/// line-separable, encode(a + b) == encode(a) + encode(b) whenever a ends with '\n'. Bytes
/// that are not well-formed UTF-8 are read as U+FFFD first (as a UTF-8 decoder would hand them
/// to the reference). decode(ids) is the reference's decode(ids, skip_special_tokens=false).
/// Special-token roles come from the file (see docs/data.md, "Hugging Face tokenizer.json").
class HuggingFaceTokenizer final : public Tokenizer {
 public:
  /// Parses the text of a tokenizer.json; `name` (the file's path) prefixes every error.
  static std::unique_ptr<HuggingFaceTokenizer> from_json(std::string text, const std::string& name);
  /// Reads a tokenizer.json file.
  static std::unique_ptr<HuggingFaceTokenizer> from_file(const std::filesystem::path& path);
  ~HuggingFaceTokenizer() override;

  std::string kind() const override { return "huggingface"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  std::string token_text(int64_t id) const override;
  /// Writes the tokenizer.json it was read from, byte for byte.
  void save(const std::filesystem::path& dir) const override;

  /// Appends the ids of one line (the reference's encode of that string, no special tokens).
  void encode_line(std::string_view line, std::vector<int64_t>& ids) const;
  /// The model's type: "BPE", "WordPiece", "WordLevel" or "Unigram".
  std::string model_type() const;
  const std::string& json_text() const { return json_text_; }

 private:
  HuggingFaceTokenizer();

  std::string json_text_;
  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<hf::Model> model_;
  std::unique_ptr<hf::Decoder> decoder_;
  std::unique_ptr<hf::AddedTokens> added_;
  std::vector<std::string> tokens_;  // id -> text (added tokens over the model's)
  std::vector<bool> known_;          // id is used by the model or an added token
};

/// True when a parsed JSON document looks like a Hugging Face tokenizer.json (has "model").
bool is_huggingface_tokenizer_json(std::string_view text);

}  // namespace rota::data
