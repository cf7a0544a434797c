// tokenizer.json models: BPE, WordPiece, WordLevel and Unigram turn one pre-tokenized piece
// into ids.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/huggingface/hf_json.h"
#include "data/tokenizer/string_hash.h"

namespace rota::data::hf {

/// Pieces longer than this are not cached (a whole line, when there is no pre-tokenizer).
inline constexpr size_t kCachedPieceBytes = 256;

class Model {
 public:
  virtual ~Model() = default;
  /// Appends the ids of one piece.
  virtual void encode(std::string_view piece, std::vector<int64_t>& ids) const = 0;
  /// "BPE", "WordPiece", "WordLevel", "Unigram".
  virtual std::string type() const = 0;

  /// id -> token text ("" for an id the vocabulary does not use).
  const std::vector<std::string>& tokens() const { return tokens_; }
  /// The id of a token, or -1.
  int64_t find(std::string_view token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? -1 : it->second;
  }
  /// The unknown token's text, if the model has one.
  const std::optional<std::string>& unk_token() const { return unk_token_; }

 protected:
  /// Registers token -> id (throws naming `at` when an id repeats or is negative).
  void add_token(const std::string& token, int64_t id, const JsonPath& at);
  /// A per-thread cache of piece -> ids for this model (cleared when it grows large).
  StringMap<std::vector<int32_t>>& cache() const;

  std::vector<std::string> tokens_;
  StringMap<int64_t> ids_;
  std::optional<std::string> unk_token_;

 private:
  uint64_t cache_key_ = next_cache_key();
  static uint64_t next_cache_key();
};

/// Supported: BPE (dropout null), WordPiece, WordLevel, Unigram.
std::unique_ptr<Model> parse_model(const json& value, const JsonPath& at);
inline constexpr const char* kSupportedModels = "BPE, WordPiece, WordLevel, Unigram";

std::unique_ptr<Model> parse_bpe(const json& value, const JsonPath& at);
std::unique_ptr<Model> parse_unigram(const json& value, const JsonPath& at);
std::unique_ptr<Model> parse_word_piece(const json& value, const JsonPath& at);
std::unique_ptr<Model> parse_word_level(const json& value, const JsonPath& at);

/// Reads a {"token": id, ...} vocabulary object.
void read_vocab_object(const json& vocab, const JsonPath& at,
                       const std::function<void(const std::string&, int64_t)>& add);

}  // namespace rota::data::hf
