// The algorithm of a SentencePiece model, read from its bytes.
#include <string>

#include <gtest/gtest.h>

#include "data/tokenizer/sentencepiece_model_type.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "framework/base/file_io.h"
#include "tests/support/expect_error.h"
#include "tests/support/source_tree.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

std::string training_lines() {
  std::string text;
  for (int i = 0; i < 400; ++i)
    text += "the quick brown fox " + std::to_string(i % 37) + " jumps over the lazy dog\n";
  return text;
}

TEST(SentencePieceModelType, TrainedModelsSayTheirAlgorithm) {
  for (const auto& [type, expected] : {std::pair{SentencePieceModel::kBpe, "bpe"},
                                       std::pair{SentencePieceModel::kUnigram, "unigram"}}) {
    SentencePieceOptions options;
    options.model = type;
    options.vocab_size = 40;
    const std::string model = train_sentencepiece_model(training_lines(), options);
    EXPECT_EQ(sentencepiece_model_type(model), expected);
  }
  // The goldens' T5-style model (written by spm_train, unigram).
  EXPECT_EQ(sentencepiece_model_type(read_file(std::string(ROTA_SOURCE_DIR) +
                                               "/tests/golden/tokenizers/spm_t5_style.model")),
            "unigram");
}

TEST(SentencePieceModelType, HandWrittenMessages) {
  // No trainer_spec: SentencePiece's default, UNIGRAM.
  EXPECT_EQ(sentencepiece_model_type(""), "unigram");
  // trainer_spec { model_type: BPE (2) } = field 2, length 2, { field 3 varint 2 }.
  EXPECT_EQ(sentencepiece_model_type(std::string("\x12\x02\x18\x02", 4)), "bpe");
  // Two trainer_specs: the later value wins (WORD = 3), as protobuf merges them.
  EXPECT_EQ(sentencepiece_model_type(std::string("\x12\x02\x18\x02\x12\x02\x18\x03", 8)), "word");
  rota::testing::expect_error([] { sentencepiece_model_type(std::string("\x12\x05\x18", 3)); },
                              "past the end");
  rota::testing::expect_error([] { sentencepiece_model_type(std::string("\x12\x02\x18\x09", 4)); },
                              "unknown model_type 9");
  rota::testing::expect_error([] { sentencepiece_model_type("not a model at all"); },
                              "SentencePiece model");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
