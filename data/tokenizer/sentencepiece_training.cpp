// Training a SentencePiece model from in-memory text (sentencepiece_trainer.h).
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "framework/base/error.h"

namespace rota::data {

namespace {

// Feeds the training lines to the trainer without writing them to a file.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  bool done() const override { return index_ >= lines_.size(); }
  void Next() override { ++index_; }
  const std::string& value() const override { return lines_[index_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> lines_;
  size_t index_ = 0;
};

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\v\f") == std::string_view::npos;
}

}  // namespace

std::string train_sentencepiece_model(std::string_view text, const SentencePieceOptions& options) {
  ROTA_CHECK(options.vocab_size > 0, "sentencepiece: vocab_size must be positive, got {}",
             options.vocab_size);
  ROTA_CHECK(options.character_coverage > 0 && options.character_coverage <= 1,
             "sentencepiece: character_coverage must be in (0, 1], got {}",
             options.character_coverage);
  std::vector<std::string_view> all_lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (!is_blank(line)) all_lines.push_back(line);
    pos = end + 1;
  }
  ROTA_CHECK(!all_lines.empty(), "sentencepiece: the training text has no non-blank line");
  // Deterministic subsample: evenly spaced lines (SentencePiece's own sampling is random).
  std::vector<std::string> lines;
  const size_t wanted = options.max_sentences > 0
                            ? std::min(all_lines.size(), static_cast<size_t>(options.max_sentences))
                            : all_lines.size();
  size_t longest = 0;
  for (size_t i = 0; i < wanted; ++i) {
    lines.emplace_back(all_lines[i * all_lines.size() / wanted]);
    longest = std::max(longest, lines.back().size());
  }

  std::unordered_map<std::string, std::string> args;
  args["model_type"] = options.model == SentencePieceModel::kBpe ? "bpe" : "unigram";
  args["vocab_size"] = std::to_string(options.vocab_size);
  args["character_coverage"] = std::to_string(options.character_coverage);
  args["byte_fallback"] = options.byte_fallback ? "true" : "false";
  args["normalization_rule_name"] = options.normalization;
  // Reserved pieces: ids 0, 1, ... in the order listed; absent ones get -1.
  int next_reserved_id = 0;
  std::string control_symbols;
  args["pad_id"] = args["unk_id"] = args["bos_id"] = args["eos_id"] = "-1";
  bool has_unk = false;
  for (SpecialToken kind : options.specials) {
    const std::string text_of = special_token_text(kind);
    switch (kind) {
      case SpecialToken::kPad:
      case SpecialToken::kUnk:
      case SpecialToken::kBos:
      case SpecialToken::kEos: {
        const std::string name = text_of.substr(1, text_of.size() - 2);
        ROTA_CHECK(args[name + "_id"] == "-1", "sentencepiece: special token {} listed twice",
                   text_of);
        args[name + "_id"] = std::to_string(next_reserved_id++);
        args[name + "_piece"] = text_of;
        has_unk |= kind == SpecialToken::kUnk;
        break;
      }
      default:
        ROTA_CHECK(control_symbols.find(text_of) == std::string::npos,
                   "sentencepiece: special token {} listed twice", text_of);
        control_symbols += (control_symbols.empty() ? "" : ",") + text_of;
    }
  }
  ROTA_CHECK(has_unk, "sentencepiece: the special tokens must include <unk>");
  if (!control_symbols.empty()) args["control_symbols"] = control_symbols;
  args["unk_surface"] = special_token_text(SpecialToken::kUnk);
  args["max_sentence_length"] = std::to_string(std::max<size_t>(4192, longest + 1));
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  args["num_threads"] = std::to_string(options.num_threads > 0 ? options.num_threads : cpus);
  args["minloglevel"] = "2";  // errors only; the trainer's progress log is very chatty

  LineIterator iterator(std::move(lines));
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &model);
  ROTA_CHECK(status.ok(), "sentencepiece: training failed: {}", status.ToString());
  return model;
}

}  // namespace rota::data
