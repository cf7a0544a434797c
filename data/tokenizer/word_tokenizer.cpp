// Word-level tokenizer.
#include "data/tokenizer/word_tokenizer.h"

#include <algorithm>

#include "data/tokenizer/huggingface/hf_export.h"
#include "data/tokenizer/tokenizer_config.h"
#include "data/util/utf8.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

constexpr const char* kVocabFile = "vocab.txt";

}  // namespace

WordTokenizer::WordTokenizer(std::vector<std::string> tokens) : tokens_(std::move(tokens)) {
  ids_.reserve(tokens_.size());
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const auto [it, inserted] = ids_.emplace(tokens_[id], static_cast<int64_t>(id));
    ROTA_CHECK(inserted, "word tokenizer: '{}' appears twice in the vocabulary", tokens_[id]);
    if (const auto kind = parse_special_token(tokens_[id]); kind && tokens_[id].front() == '<') {
      specials_.set(*kind, static_cast<int64_t>(id));
    }
  }
  specials_.require(SpecialToken::kUnk, "word tokenizer");
}

std::unique_ptr<WordTokenizer> WordTokenizer::train(std::string_view text,
                                                    const WordVocabOptions& options) {
  ROTA_CHECK(options.min_frequency >= 1, "word tokenizer: min_frequency must be >= 1, got {}",
             options.min_frequency);
  ROTA_CHECK(options.max_size >= 0, "word tokenizer: max_size must be >= 0, got {}",
             options.max_size);
  std::vector<std::string> tokens;
  for (SpecialToken kind : options.specials) {
    ROTA_CHECK(std::find(tokens.begin(), tokens.end(), special_token_text(kind)) == tokens.end(),
               "word tokenizer: special token {} listed twice", special_token_text(kind));
    tokens.push_back(special_token_text(kind));
  }
  ROTA_CHECK(std::find(options.specials.begin(), options.specials.end(), SpecialToken::kUnk) !=
                 options.specials.end(),
             "word tokenizer: the special tokens must include <unk>");
  ROTA_CHECK(options.max_size == 0 || options.max_size >= static_cast<int64_t>(tokens.size()),
             "word tokenizer: max_size {} is smaller than the {} special tokens", options.max_size,
             tokens.size());

  struct Count {
    int64_t count = 0;
    int64_t first = 0;  // order of first appearance, for deterministic ties
  };
  std::unordered_map<std::string_view, Count> counts;
  split_lines_and_words(
      text,
      [&](std::string_view word) {
        auto [it, inserted] =
            counts.try_emplace(word, Count{0, static_cast<int64_t>(counts.size())});
        ++it->second.count;
      },
      [] {});
  std::vector<std::pair<std::string_view, Count>> words;
  words.reserve(counts.size());
  for (const auto& [word, count] : counts) {
    const bool is_special = parse_special_token(word).has_value() && word.front() == '<';
    if (!is_special && count.count >= options.min_frequency) words.emplace_back(word, count);
  }
  std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) {
    if (a.second.count != b.second.count) return a.second.count > b.second.count;
    return a.second.first < b.second.first;
  });
  size_t keep = words.size();
  if (options.max_size > 0)
    keep = std::min(keep, static_cast<size_t>(options.max_size) - tokens.size());
  for (size_t i = 0; i < keep; ++i) tokens.emplace_back(words[i].first);
  return std::unique_ptr<WordTokenizer>(new WordTokenizer(std::move(tokens)));
}

int64_t WordTokenizer::find(std::string_view word) const {
  const auto it = ids_.find(word);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int64_t> WordTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size() / 5 + 1);
  const int64_t unk = specials_.id(SpecialToken::kUnk);
  const int64_t eos = specials_.id(SpecialToken::kEos);
  split_lines_and_words(
      text,
      [&](std::string_view word) {
        const auto it = ids_.find(word);
        ids.push_back(it == ids_.end() ? unk : it->second);
      },
      [&] {
        if (eos >= 0) ids.push_back(eos);
      });
  return ids;
}

std::string WordTokenizer::decode(std::span<const int64_t> ids) const {
  std::string text;
  const int64_t eos = specials_.id(SpecialToken::kEos);
  bool line_start = true;
  for (int64_t id : ids) {
    check_id(id, "word tokenizer decode");
    if (id == eos) {
      text.push_back('\n');
      line_start = true;
      continue;
    }
    if (!line_start) text.push_back(' ');
    text += tokens_[id];
    line_start = false;
  }
  return text;
}

std::string WordTokenizer::token_text(int64_t id) const {
  check_id(id, "word tokenizer token_text");
  return tokens_[id];
}

void WordTokenizer::save(const std::filesystem::path& dir) const {
  std::string vocab;
  for (const std::string& token : tokens_) {
    vocab += token;
    vocab.push_back('\n');
  }
  std::filesystem::create_directories(dir);
  write_file_atomically(dir / kVocabFile, vocab);
  nlohmann::json config = detail::config_header(*this);
  config["vocab_file"] = kVocabFile;
  detail::write_config(dir, config);
  // A Hugging Face tokenizer.json is UTF-8 JSON: a vocabulary with a word that is not valid
  // UTF-8 (from a Latin-1 corpus, say) has no such form, and the run keeps Rota's files only.
  const bool utf8 = std::all_of(tokens_.begin(), tokens_.end(), [](const std::string& token) {
    return is_valid_utf8(token);
  });
  if (utf8) {
    write_file_atomically(dir / hf::kHuggingFaceExportFile,
                          hf::export_word_tokenizer(tokens_, specials_));
  }
}

std::unique_ptr<WordTokenizer> WordTokenizer::load(const std::filesystem::path& dir) {
  const nlohmann::json config = detail::read_config(dir);
  detail::expect_kind(config, "word");
  const std::string vocab =
      read_file(detail::companion_file(dir, config, "vocab_file", kVocabFile));
  std::vector<std::string> tokens;
  size_t pos = 0;
  while (pos < vocab.size()) {
    size_t end = vocab.find('\n', pos);
    if (end == std::string::npos) end = vocab.size();
    tokens.emplace_back(vocab.substr(pos, end - pos));
    pos = end + 1;
  }
  auto tokenizer = std::unique_ptr<WordTokenizer>(new WordTokenizer(std::move(tokens)));
  ROTA_CHECK(tokenizer->vocab_size() == detail::integer_field(config, "vocab_size", -1) &&
                 tokenizer->specials() == detail::special_tokens_from_config(config),
             "tokenizer: word tokenizer in {}: vocab.txt does not match tokenizer.json",
             dir.string());
  return tokenizer;
}

}  // namespace rota::data
