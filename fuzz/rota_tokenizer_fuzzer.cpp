// Fuzzes Rota's saved tokenizers (load_tokenizer on a directory: tokenizer.json + vocab/model).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "framework/base/error.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  // The input is tokenizer.json, then (after a line "=====") the companion file, written both
  // as vocab.txt (word tokenizers) and spm.model (SentencePiece ones).
  const std::string_view input = rota::fuzz::as_text(data, size);
  constexpr std::string_view kSeparator = "\n=====\n";
  const size_t cut = input.find(kSeparator);
  const std::string_view config = input.substr(0, cut);
  const std::string_view companion =
      cut == std::string_view::npos ? std::string_view() : input.substr(cut + kSeparator.size());
  const fs::path& dir = rota::fuzz::scratch_dir("tokenizer");
  rota::fuzz::write_bytes(dir / "tokenizer.json", config);
  rota::fuzz::write_bytes(dir / "vocab.txt", companion);
  rota::fuzz::write_bytes(dir / "spm.model", companion);
  try {
    const auto tokenizer = rota::data::load_tokenizer(dir);
    const std::vector<int64_t> ids = tokenizer->encode("Hello, world!\nÀ bientôt 123\n");
    tokenizer->decode(ids);
    for (int64_t id = 0; id < std::min<int64_t>(tokenizer->vocab_size(), 8); ++id) {
      tokenizer->token_text(id);
    }
  } catch (const rota::Error&) {
    // The expected outcome for a bad tokenizer.
  }
  return 0;
}
