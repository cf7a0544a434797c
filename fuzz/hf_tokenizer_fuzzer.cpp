// Fuzzes Hugging Face tokenizer.json (HuggingFaceTokenizer::from_json), then encodes/decodes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "framework/base/error.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto tokenizer = rota::data::HuggingFaceTokenizer::from_json(
        std::string(rota::fuzz::as_text(data, size)), "fuzz/tokenizer.json");
    const std::vector<int64_t> ids =
        tokenizer->encode("Hello, world! don't  stop\nÀ bientôt, 東京 123 \t🙂\n");
    tokenizer->decode(ids);
    for (int64_t id = 0; id < std::min<int64_t>(tokenizer->vocab_size(), 8); ++id) {
      tokenizer->token_text(id);
    }
  } catch (const rota::Error&) {
    // The expected outcome for a bad tokenizer.json.
  }
  return 0;
}
