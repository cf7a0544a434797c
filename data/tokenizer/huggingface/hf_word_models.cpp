// The WordPiece (greedy longest match with a continuation prefix) and WordLevel (whole-word
// lookup) models of tokenizer.json.
#include "data/tokenizer/huggingface/hf_model.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

class WordPiece final : public Model {
 public:
  WordPiece(const json& value, const JsonPath& at) {
    read_vocab_object(
        member(value, at, "vocab"), at.key("vocab"),
        [&](const std::string& token, int64_t id) { add_token(token, id, at.key("vocab")); });
    unk_token_ = string_or(value, at, "unk_token", "[UNK]");
    prefix_ = string_or(value, at, "continuing_subword_prefix", "##");
    max_chars_ = int_or(value, at, "max_input_chars_per_word", 100);
    unk_id_ = find(*unk_token_);
  }

  std::string type() const override { return "WordPiece"; }

  void encode(std::string_view word, std::vector<int64_t>& ids) const override {
    int64_t chars = 0;
    for (size_t pos = 0; pos < word.size();
         pos += utf8_length(static_cast<unsigned char>(word[pos])))
      ++chars;
    if (chars > max_chars_) {
      ids.push_back(unk());
      return;
    }
    const size_t first = ids.size();
    std::string candidate;
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      int64_t found = -1;
      while (start < end) {
        candidate.clear();
        if (start > 0) candidate += prefix_;
        candidate.append(word.substr(start, end - start));
        found = find(candidate);
        if (found >= 0) break;
        // Drop the last character.
        size_t last = end - 1;
        while (last > start && (static_cast<unsigned char>(word[last]) & 0xC0) == 0x80) --last;
        end = last;
      }
      if (found < 0) {
        ids.resize(first);
        ids.push_back(unk());
        return;
      }
      ids.push_back(found);
      start = end;
    }
  }

 private:
  int64_t unk() const {
    ROTA_CHECK(unk_id_ >= 0, "tokenizer.json: WordPiece unk_token '{}' is not in the vocabulary",
               *unk_token_);
    return unk_id_;
  }

  std::string prefix_;
  int64_t max_chars_ = 100;
  int64_t unk_id_ = -1;
};

class WordLevel final : public Model {
 public:
  WordLevel(const json& value, const JsonPath& at) {
    read_vocab_object(
        member(value, at, "vocab"), at.key("vocab"),
        [&](const std::string& token, int64_t id) { add_token(token, id, at.key("vocab")); });
    unk_token_ = string_or(value, at, "unk_token", "<unk>");
    unk_id_ = find(*unk_token_);
  }

  std::string type() const override { return "WordLevel"; }

  void encode(std::string_view word, std::vector<int64_t>& ids) const override {
    const int64_t id = find(word);
    if (id >= 0) {
      ids.push_back(id);
      return;
    }
    ROTA_CHECK(unk_id_ >= 0,
               "tokenizer.json: WordLevel unk_token '{}' is not in the vocabulary and '{}' is "
               "unknown",
               *unk_token_, std::string(word));
    ids.push_back(unk_id_);
  }

 private:
  int64_t unk_id_ = -1;
};

}  // namespace

std::unique_ptr<Model> parse_word_piece(const json& value, const JsonPath& at) {
  return std::make_unique<WordPiece>(value, at);
}

std::unique_ptr<Model> parse_word_level(const json& value, const JsonPath& at) {
  return std::make_unique<WordLevel>(value, at);
}

}  // namespace rota::data::hf
