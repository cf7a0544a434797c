// SentencePiece tokenizer: line-wise encoding with <eos>, special tokens read from the model.
#include "data/tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include "data/tokenizer/tokenizer_config.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

constexpr const char* kModelFile = "spm.model";

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(std::string serialized_model)
    : model_(std::move(serialized_model)),
      processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  sentencepiece::util::Status status;
  try {
    status = processor_->LoadFromSerializedProto(model_);
  } catch (const std::exception& e) {
    // Not every malformed model gets a Status: building the unigram trie throws on an empty
    // piece (Darts::Details::Exception), for one.
    fail("sentencepiece: cannot load the model: {}", e.what());
  }
  ROTA_CHECK(status.ok(), "sentencepiece: cannot load the model: {}", status.ToString());
  // Special ids come from the model: a special token is present when its piece is in it.
  for (int i = 0; i < kSpecialTokenKinds; ++i) {
    const auto kind = static_cast<SpecialToken>(i);
    const int id = processor_->PieceToId(special_token_text(kind));
    if (id >= 0 && processor_->IdToPiece(id) == special_token_text(kind)) specials_.set(kind, id);
  }
  // A model trained elsewhere: the ids it declares for pad/unk/bos/eos, and control or
  // user-defined pieces spelled like the other roles.
  const std::pair<SpecialToken, int> declared[] = {{SpecialToken::kPad, processor_->pad_id()},
                                                   {SpecialToken::kUnk, processor_->unk_id()},
                                                   {SpecialToken::kBos, processor_->bos_id()},
                                                   {SpecialToken::kEos, processor_->eos_id()}};
  for (const auto& [kind, id] : declared) {
    if (!specials_.has(kind) && id >= 0 && id < processor_->GetPieceSize()) specials_.set(kind, id);
  }
  const std::pair<SpecialToken, const char*> named[] = {{SpecialToken::kMask, "[MASK]"},
                                                        {SpecialToken::kCls, "[CLS]"},
                                                        {SpecialToken::kSep, "[SEP]"},
                                                        {SpecialToken::kPad, "[PAD]"}};
  for (const auto& [kind, piece] : named) {
    const int id = processor_->PieceToId(piece);
    if (!specials_.has(kind) && id >= 0 && processor_->IdToPiece(id) == piece &&
        !processor_->IsUnknown(id)) {
      specials_.set(kind, id);
    }
  }
  specials_.require(SpecialToken::kUnk, "sentencepiece");
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::train(
    std::string_view text, const SentencePieceOptions& options) {
  return from_model(train_sentencepiece_model(text, options));
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_model(
    std::string serialized_model) {
  return std::unique_ptr<SentencePieceTokenizer>(
      new SentencePieceTokenizer(std::move(serialized_model)));
}

int64_t SentencePieceTokenizer::vocab_size() const {
  return processor_->GetPieceSize();
}

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  const int64_t eos = specials_.id(SpecialToken::kEos);
  std::vector<int> line_ids;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto status = processor_->Encode(text.substr(pos, end - pos), &line_ids);
    ROTA_CHECK(status.ok(), "sentencepiece: encode failed: {}", status.ToString());
    ids.insert(ids.end(), line_ids.begin(), line_ids.end());
    if (eos >= 0) ids.push_back(eos);
    pos = end + 1;
  }
  return ids;
}

std::string SentencePieceTokenizer::decode(std::span<const int64_t> ids) const {
  std::string text;
  std::vector<int> run;  // ordinary pieces (and <unk>) decoded together by SentencePiece
  std::string piece_text;
  const auto flush = [&] {
    if (run.empty()) return;
    const auto status = processor_->Decode(run, &piece_text);
    ROTA_CHECK(status.ok(), "sentencepiece: decode failed: {}", status.ToString());
    text += piece_text;
    run.clear();
  };
  for (int64_t id : ids) {
    check_id(id, "sentencepiece decode");
    const auto kind = specials_.kind_of(id);
    if (!kind || *kind == SpecialToken::kUnk) {
      run.push_back(static_cast<int>(id));
      continue;
    }
    flush();
    text += *kind == SpecialToken::kEos ? "\n" : special_token_text(*kind);
  }
  flush();
  return text;
}

std::string SentencePieceTokenizer::token_text(int64_t id) const {
  check_id(id, "sentencepiece token_text");
  return processor_->IdToPiece(static_cast<int>(id));
}

void SentencePieceTokenizer::save(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  write_file_atomically(dir / kModelFile, model_);
  nlohmann::json config = detail::config_header(*this);
  config["model_file"] = kModelFile;
  detail::write_config(dir, config);
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(
    const std::filesystem::path& dir) {
  const nlohmann::json config = detail::read_config(dir);
  detail::expect_kind(config, "sentencepiece");
  auto tokenizer =
      from_model(read_file(detail::companion_file(dir, config, "model_file", kModelFile)));
  ROTA_CHECK(tokenizer->vocab_size() == detail::integer_field(config, "vocab_size", -1) &&
                 tokenizer->specials() == detail::special_tokens_from_config(config),
             "tokenizer: sentencepiece tokenizer in {}: spm.model does not match tokenizer.json",
             dir.string());
  return tokenizer;
}

}  // namespace rota::data
