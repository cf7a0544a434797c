// open_tokenizer: what a path holds decides how it is read.
#include "data/tokenizer/open_tokenizer.h"

#include <nlohmann/json.hpp>

#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/tokenizer_config.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

std::unique_ptr<Tokenizer> open_json_file(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) fail("not a tokenizer: {}: not valid JSON", path.string());
  if (doc.is_object() && doc.value("format", "") == detail::kTokenizerFormat) {
    // Rota's own format reads its companion files from the same directory.
    ROTA_CHECK(path.filename() == kTokenizerConfigFile,
               "not a tokenizer: {}: a Rota tokenizer must be named {} (open its directory)",
               path.string(), kTokenizerConfigFile);
    return load_tokenizer(path.parent_path().empty() ? "." : path.parent_path());
  }
  if (doc.is_object() && doc.contains("model"))
    return HuggingFaceTokenizer::from_json(text, path.string());
  fail(
      "not a tokenizer: {}: JSON that is neither a Hugging Face tokenizer.json (no \"model\") "
      "nor a Rota tokenizer (no \"format\": \"{}\")",
      path.string(), detail::kTokenizerFormat);
}

}  // namespace

std::unique_ptr<Tokenizer> open_tokenizer(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) fail("not a tokenizer: {}: no such file or directory", path.string());
  if (fs::is_directory(path)) {
    if (!fs::is_regular_file(path / kTokenizerConfigFile))
      fail("not a tokenizer: {}: the directory has no {}", path.string(), kTokenizerConfigFile);
    return load_tokenizer(path);
  }
  const std::string extension = path.extension().string();
  if (extension == ".json") return open_json_file(path);
  if (extension == ".model") {
    try {
      return SentencePieceTokenizer::from_model(read_file(path));
    } catch (const Error& e) {
      fail("not a tokenizer: {}: {}", path.string(), e.what());
    }
  }
  fail("not a tokenizer: {}: expected a directory, a *.json file or a SentencePiece *.model file",
       path.string());
}

}  // namespace rota::data
