// Every tokenizer kind is line-separable: encode(a + b) == encode(a) + encode(b) when a ends with
// '\n' — the property that lets `rota data prepare` and training encode a split piece by piece.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/corpus/corpus.h"
#include "data/prepared/split_encoder.h"
#include "data/tokenizer/open_tokenizer.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "tests/data/test_files.h"
#include "tests/support/source_tree.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

// Lines of words (some repeated, some rare, some blank lines, punctuation, UTF-8, runs of
// spaces), the kind of text the tokenizers see.
std::string sample_text(int lines, uint64_t seed) {
  const std::vector<std::string> words = {"the",  "of",    "and",   "to",     "a",  "in",
                                          "é",    "naïve", "über",  "x,",     "42", "(b)",
                                          "rare", "word",  "zebra", "quartz", "—",  "東京"};
  std::mt19937_64 gen(seed);
  std::string text;
  for (int l = 0; l < lines; ++l) {
    if (gen() % 13 == 0) {
      text += "\n";
      continue;
    }
    const int n = 1 + static_cast<int>(gen() % 12);
    for (int w = 0; w < n; ++w) {
      if (w) text += gen() % 9 == 0 ? "  " : " ";
      text += words[gen() % words.size()];
    }
    text += "\n";
  }
  return text;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class LineSeparable : public ::testing::TestWithParam<TokenizerKind> {};

TEST_P(LineSeparable, EncodingPiecesEqualsEncodingTheWhole) {
  const std::string train = sample_text(800, 1);
  TokenizerSpec spec;
  spec.kind = GetParam();
  if (spec.kind == TokenizerKind::kBpe || spec.kind == TokenizerKind::kUnigram) {
    spec.vocab_size = 60;
  }
  if (spec.kind == TokenizerKind::kChar) spec.specials = std::vector{SpecialToken::kUnk};
  const auto tokenizer = build_tokenizer(spec, train);
  // Unseen text (other seed), without a final newline, cut at every kind of line boundary.
  std::string text = sample_text(300, 2) + "last line without newline";
  const std::vector<int64_t> whole = tokenizer->encode(text);
  std::vector<size_t> cuts;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') cuts.push_back(i + 1);
  }
  ASSERT_GT(cuts.size(), 250u);
  for (size_t c : cuts) {
    const std::string_view a = std::string_view(text).substr(0, c);
    const std::string_view b = std::string_view(text).substr(c);
    ASSERT_EQ(concat(tokenizer->encode(a), tokenizer->encode(b)), whole)
        << tokenizer->kind() << " cut at " << c;
  }
}

TEST_P(LineSeparable, EncodeSplitEqualsEncodingTheSplitText) {
  const testing::TempDir tmp;
  const std::string train = sample_text(800, 3);
  testing::write_bytes(tmp / "corpus" / "train.txt", train);
  testing::write_bytes(tmp / "corpus" / "valid.txt", sample_text(40, 4));
  const Corpus corpus = Corpus::open((tmp / "corpus").string());
  TokenizerSpec spec;
  spec.kind = GetParam();
  if (spec.kind == TokenizerKind::kBpe || spec.kind == TokenizerKind::kUnigram) {
    spec.vocab_size = 60;
  }
  const auto tokenizer = build_tokenizer(spec, train);
  for (const std::string split : {"train", "valid"}) {
    for (size_t piece : {size_t{1}, size_t{97}, size_t{4096}, size_t{1} << 20}) {
      EncodeOptions options;
      options.piece_bytes = piece;
      options.threads = 2;
      int64_t progressed = 0;
      options.progress = [&](size_t bytes) { progressed += static_cast<int64_t>(bytes); };
      std::vector<int64_t> ids;
      const int64_t bytes = encode_split(
          corpus, split, *tokenizer, options,
          [&](std::span<const int64_t> got) { ids.insert(ids.end(), got.begin(), got.end()); });
      const std::string text = corpus.read_text(split);
      EXPECT_EQ(bytes, static_cast<int64_t>(text.size()));
      EXPECT_EQ(progressed, bytes);
      ASSERT_EQ(ids, tokenizer->encode(text)) << tokenizer->kind() << " " << split << " " << piece;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, LineSeparable,
                         ::testing::Values(TokenizerKind::kByte, TokenizerKind::kChar,
                                           TokenizerKind::kWord, TokenizerKind::kBpe,
                                           TokenizerKind::kUnigram),
                         [](const auto& info) {
                           return std::string(tokenizer_kind_name(info.param));
                         });

// Hugging Face tokenizer.json files (the goldens' own, trained by the reference library): the
// same property, which their encode gets by encoding line by line (the documented contract).
class HuggingFaceLineSeparable : public ::testing::TestWithParam<const char*> {};

TEST_P(HuggingFaceLineSeparable, PiecesAndParallelSplitsEqualTheWhole) {
  const auto tokenizer = open_tokenizer(std::string(ROTA_SOURCE_DIR) + "/tests/golden/tokenizers/" +
                                        GetParam() + ".json");
  std::string text = sample_text(300, 5) + "last line without newline";
  const std::vector<int64_t> whole = tokenizer->encode(text);
  for (size_t c = 0; c < text.size(); ++c) {
    if (text[c] != '\n') continue;
    const std::string_view a = std::string_view(text).substr(0, c + 1);
    const std::string_view b = std::string_view(text).substr(c + 1);
    ASSERT_EQ(concat(tokenizer->encode(a), tokenizer->encode(b)), whole) << "cut at " << c + 1;
  }
  const testing::TempDir tmp;
  testing::write_bytes(tmp / "corpus" / "train.txt", sample_text(3000, 6));
  const Corpus corpus = Corpus::open((tmp / "corpus").string());
  const std::string train = corpus.read_text("train");
  for (size_t piece : {size_t{97}, size_t{1} << 20}) {
    EncodeOptions options;
    options.piece_bytes = piece;
    options.threads = 2;
    std::vector<int64_t> ids;
    encode_split(corpus, "train", *tokenizer, options, [&](std::span<const int64_t> got) {
      ids.insert(ids.end(), got.begin(), got.end());
    });
    ASSERT_EQ(ids, tokenizer->encode(train)) << "pieces of " << piece;
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, HuggingFaceLineSeparable,
                         ::testing::Values("gpt2_bpe", "llama3_bpe", "bert_wordpiece",
                                           "spm_precompiled_unigram", "unigram_metaspace"));

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
