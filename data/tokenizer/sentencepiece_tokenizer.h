// SentencePiece tokenizer (BPE or unigram) applied through libsentencepiece.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}  // namespace sentencepiece

namespace rota::data {

enum class SentencePieceModel { kBpe, kUnigram };

/// How a SentencePiece model is trained from the training split.
struct SentencePieceOptions {
  SentencePieceModel model = SentencePieceModel::kUnigram;
  /// Exact vocabulary size including the special tokens (training fails when the text is too
  /// small to reach it).
  int64_t vocab_size = 8000;
  /// Special tokens. Must include <unk>. <pad>, <unk>, <bos>, <eos> get ids 0, 1, ... in the
  /// order listed; <mask>, <cls>, <sep> (SentencePiece control symbols) follow. With <eos>,
  /// every line ends with an <eos> token, as in the word tokenizer.
  std::vector<SpecialToken> specials = {SpecialToken::kUnk, SpecialToken::kEos};
  /// Fraction of the characters the model must cover (1.0 keeps every character).
  double character_coverage = 1.0;
  /// Unknown characters become their UTF-8 bytes (needs 256 byte pieces in the vocabulary)
  /// instead of <unk>.
  bool byte_fallback = false;
  /// SentencePiece normalisation rule: "nmt_nfkc" (its default), "nfkc", "identity", ...
  std::string normalization = "nmt_nfkc";
  /// Train on at most this many lines, evenly spaced through the text (0 = all lines).
  int64_t max_sentences = 0;
  /// Trainer threads (0 = the number of CPUs).
  int num_threads = 0;
};

/// Text is split into lines at '\n'; each line is encoded by SentencePiece and followed by
/// <eos> when the tokenizer has one. decode renders <eos> as "\n" and decodes the pieces in
/// between with SentencePiece, so decode(encode(x)) == x for text that SentencePiece's
/// normalisation leaves unchanged (single spaces, no leading/trailing spaces, NFKC) and that
/// has no characters outside the vocabulary. Unknown pieces decode as "<unk>".
class SentencePieceTokenizer final : public Tokenizer {
 public:
  /// Trains a model on the lines of text (blank lines skipped).
  static std::unique_ptr<SentencePieceTokenizer> train(std::string_view text,
                                                       const SentencePieceOptions& options);
  /// Wraps a serialized SentencePiece ModelProto (the bytes of a .model file).
  static std::unique_ptr<SentencePieceTokenizer> from_model(std::string serialized_model);
  static std::unique_ptr<SentencePieceTokenizer> load(const std::filesystem::path& dir);
  ~SentencePieceTokenizer() override;

  std::string kind() const override { return "sentencepiece"; }
  int64_t vocab_size() const override;
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  std::string token_text(int64_t id) const override;
  /// Writes tokenizer.json and spm.model (usable with the spm_encode/spm_decode tools).
  void save(const std::filesystem::path& dir) const override;

  /// The serialized ModelProto.
  const std::string& serialized_model() const { return model_; }

 private:
  explicit SentencePieceTokenizer(std::string serialized_model);

  std::string model_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

/// Trains a SentencePiece model on the non-blank lines of text; returns the serialized
/// ModelProto. Throws rota::Error with SentencePiece's message when training fails.
std::string train_sentencepiece_model(std::string_view text, const SentencePieceOptions& options);

}  // namespace rota::data
