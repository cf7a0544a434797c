// Fuzzes SentencePiece model bytes (SentencePieceTokenizer::from_model), then encodes/decodes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "framework/base/error.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tokenizer = rota::data::SentencePieceTokenizer::from_model(
        std::string(rota::fuzz::as_text(data, size)));
    const std::vector<int64_t> ids = tokenizer->encode("Hello, world!\nÀ bientôt ▁ 123\n");
    tokenizer->decode(ids);
    for (int64_t id = 0; id < std::min<int64_t>(tokenizer->vocab_size(), 8); ++id) {
      tokenizer->token_text(id);
    }
  } catch (const rota::Error&) {
    // The expected outcome for a bad model.
  }
  return 0;
}
