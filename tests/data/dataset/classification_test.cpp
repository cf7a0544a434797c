// TSV parsing (header detection, GLUE files) and classification batches (cls, padding, truncation).
#include <gtest/gtest.h>

#include "data/corpus/corpus.h"
#include "data/dataset/classification_dataset.h"
#include "data/dataset/tsv.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

TEST(Tsv, HeaderDetectedWhenItNamesTheRequiredColumns) {
  const TsvTable table =
      parse_tsv("sentence\tlabel\na fine film \t1\r\nawful\t0", {"sentence", "label"});
  EXPECT_TRUE(table.has_header);
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0][table.column("sentence")], "a fine film ");
  EXPECT_EQ(table.rows[0][table.column("label")], "1");  // "\r" dropped
  EXPECT_EQ(table.rows[1][1], "0");                      // no final newline
  EXPECT_EQ(table.line_numbers[1], 3);
}

TEST(Tsv, HeaderlessFilesUseGivenOrPositionalNames) {
  const std::string cola =
      "gj04\t1\t\tOur friends won't buy this.\ngj04\t0\t*\tThey drank the pub.\n";
  const TsvTable named =
      parse_tsv(cola, {"sentence", "label"}, {"source", "label", "mark", "sentence"});
  EXPECT_FALSE(named.has_header);
  ASSERT_EQ(named.rows.size(), 2u);
  EXPECT_EQ(named.rows[1][named.column("sentence")], "They drank the pub.");
  EXPECT_EQ(named.rows[1][named.column("mark")], "*");
  const TsvTable positional = parse_tsv(cola, {"3", "1"});
  EXPECT_EQ(positional.rows[0][positional.column("3")], "Our friends won't buy this.");
}

TEST(Tsv, ForcedHeaderWithColumnsByPosition) {
  const std::string text = "text\tgold\nnice\t1\n";
  const TsvTable with_header = parse_tsv(text, {"0", "1"}, {}, "h.tsv", TsvHeader::kPresent);
  EXPECT_TRUE(with_header.has_header);
  ASSERT_EQ(with_header.rows.size(), 1u);
  EXPECT_EQ(with_header.column("1"), 1);  // by position
  EXPECT_EQ(with_header.column("gold"), 1);
  const TsvTable detected = parse_tsv(text, {"0", "1"});
  EXPECT_FALSE(detected.has_header);  // positional names cannot detect a header
  EXPECT_EQ(detected.rows.size(), 2u);
  const TsvTable absent = parse_tsv("sentence\tlabel\n", {"sentence", "label"},
                                    {"sentence", "label"}, "a.tsv", TsvHeader::kAbsent);
  EXPECT_EQ(absent.rows.size(), 1u);
  EXPECT_THROW(with_header.column("2"), Error);
}

TEST(Tsv, ErrorsNameTheFileLineAndColumns) {
  expect_error(
      [&] {
        parse_tsv("sentence\tscore\nx\t1\n", {"sentence", "label"}, {}, "x.tsv");
      },
      "has column 'sentence' but not 'label'");
  expect_error(
      [&] {
        parse_tsv("sentence\tlabel\nok\t1\nbroken line\n", {"sentence", "label"}, {}, "y.tsv");
      },
      "y.tsv:3: 1 fields, expected 2");
  EXPECT_THROW(parse_tsv("a\tb\n", {"sentence"}, {"only_one"}), Error);
  EXPECT_THROW(parse_tsv("", {"sentence"}), Error);
}

// Label counts from ../shared/data/README.md.
struct GlueCase {
  const char* corpus;
  const char* split;
  int64_t rows;
  int64_t positives;  // -1: unlabelled
};

TEST(Tsv, GlueFilesParseWithTheReadmeCounts) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not present";
  testing::TempDir root;
  const DataOptions options = testing::shared_data_options(shared, root / "cache");
  for (const GlueCase& c :
       {GlueCase{"sst-2", "train", 67349, 37569}, GlueCase{"sst-2", "valid", 872, 444},
        GlueCase{"sst-2", "test", 1821, 909}, GlueCase{"sst-2", "test_unlabeled", 1821, -1},
        GlueCase{"cola", "train", 8551, 6023}, GlueCase{"cola", "valid", 1043, 721},
        GlueCase{"cola", "test", 1063, -1}}) {
    const Corpus corpus = Corpus::open(c.corpus, options);
    const TsvSplit split = corpus.tsv_split(c.split);
    EXPECT_EQ(split.labeled, c.positives >= 0) << c.corpus << " " << c.split;
    std::vector<std::string> required = corpus.text_columns();
    if (split.labeled) required.push_back(corpus.label_column());
    const TsvTable table = read_tsv(split.path, required, split.columns);
    EXPECT_EQ(static_cast<int64_t>(table.rows.size()), c.rows) << c.corpus << " " << c.split;
    if (c.positives < 0) continue;
    int64_t positives = 0, negatives = 0;
    for (const auto& row : table.rows) {
      const std::string& label = row[table.column("label")];
      positives += label == "1";
      negatives += label == "0";
    }
    EXPECT_EQ(positives, c.positives) << c.corpus << " " << c.split;
    EXPECT_EQ(positives + negatives, c.rows) << c.corpus << " " << c.split;
  }
}

std::unique_ptr<WordTokenizer> classification_tokenizer(std::vector<SpecialToken> specials = {
                                                            SpecialToken::kPad, SpecialToken::kUnk,
                                                            SpecialToken::kEos, SpecialToken::kCls,
                                                            SpecialToken::kSep}) {
  WordVocabOptions options;
  options.specials = std::move(specials);
  return WordTokenizer::train("a fine film\nan awful film\nquite good\n", options);
}

TEST(ClassificationDataset, ClsTokensPaddingMaskAndLabels) {
  const auto tokenizer = classification_tokenizer();
  const TsvTable table = parse_tsv("sentence\tlabel\na fine film \t1\ndreadful\t0\nquite good\t1\n",
                                   {"sentence", "label"});
  const ClassificationDataset dataset(table, *tokenizer, ClassificationOptions{});
  EXPECT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.num_classes(), 2);
  const int64_t cls = tokenizer->specials().id(SpecialToken::kCls);
  const int64_t pad = tokenizer->specials().id(SpecialToken::kPad);
  const int64_t eos = tokenizer->specials().id(SpecialToken::kEos);
  // <cls> a fine film <eos>
  EXPECT_EQ(dataset.sequence(0),
            (std::vector<int64_t>{cls, tokenizer->find("a"), tokenizer->find("fine"),
                                  tokenizer->find("film"), eos}));
  const std::vector<int64_t> indices = {1, 0};
  const ClassificationBatch batch = dataset.batch(indices);
  ASSERT_EQ(batch.tokens.shape(), (Shape{2, 5}));  // padded to the longest row
  ASSERT_EQ(batch.labels.shape(), (Shape{2}));
  EXPECT_EQ(batch.labels.at({0}), 0);
  EXPECT_EQ(batch.labels.at({1}), 1);
  // Row 0: <cls> dreadful(<unk>) <eos> <pad> <pad>
  const std::vector<double> mask0 = {1, 1, 1, 0, 0};
  for (int64_t t = 0; t < 5; ++t) {
    EXPECT_EQ(batch.mask.at({0, t}), mask0[t]);
    EXPECT_EQ(batch.mask.at({1, t}), 1.0);
  }
  EXPECT_EQ(batch.tokens.at({0, 1}), tokenizer->specials().id(SpecialToken::kUnk));
  EXPECT_EQ(batch.tokens.at({0, 3}), pad);
  EXPECT_EQ(batch.tokens.at({0, 4}), pad);
}

TEST(ClassificationDataset, TruncationAndFixedLengthPadding) {
  const auto tokenizer = classification_tokenizer();
  const TsvTable table =
      parse_tsv("sentence\tlabel\na fine film a fine film\t1\nquite\t0\n", {"sentence", "label"});
  ClassificationOptions options;
  options.max_length = 4;
  options.pad_to_max_length = true;
  const ClassificationDataset dataset(table, *tokenizer, options);
  EXPECT_EQ(dataset.truncated_count(), 1);
  EXPECT_EQ(dataset.sequence(0).size(), 4u);
  EXPECT_EQ(dataset.sequence(0).front(), tokenizer->specials().id(SpecialToken::kCls));
  const std::vector<int64_t> second = {1};
  EXPECT_EQ(dataset.batch(second).tokens.shape(), (Shape{1, 4}));  // fixed length
}

TEST(ClassificationDataset, SentencePairsLongestFirstTruncation) {
  const auto tokenizer = classification_tokenizer();
  const TsvTable table =
      parse_tsv("s1\ts2\tlabel\na fine film a fine film\tquite good\t2\n", {"s1", "s2", "label"});
  ClassificationOptions options;
  options.text_columns = {"s1", "s2"};
  options.max_length = 8;  // <cls> + 6 text tokens + <sep> ... = 8
  const ClassificationDataset dataset(table, *tokenizer, options);
  const std::vector<int64_t>& sequence = dataset.sequence(0);
  ASSERT_EQ(sequence.size(), 8u);
  // text1 = 7 tokens (6 words + <eos>), text2 = 3: trimmed from text1 until 6 fit: 3 + 3.
  const int64_t sep = tokenizer->specials().id(SpecialToken::kSep);
  EXPECT_EQ(sequence[4], sep);
  EXPECT_EQ(std::vector<int64_t>(sequence.begin() + 5, sequence.end()),
            tokenizer->encode("quite good"));
  EXPECT_EQ(dataset.num_classes(), 3);
}

TEST(ClassificationDataset, MissingSpecialTokensAndBadLabelsAreClearErrors) {
  const auto no_cls = classification_tokenizer({SpecialToken::kUnk, SpecialToken::kEos});
  const TsvTable table =
      parse_tsv("sentence\tlabel\nfine\tpositive\n", {"sentence", "label"}, {}, "z.tsv");
  expect_error([&] { ClassificationDataset(table, *no_cls, ClassificationOptions{}); }, "<cls>");
  ClassificationOptions no_cls_options;
  no_cls_options.add_cls = false;
  expect_error([&] { ClassificationDataset(table, *no_cls, no_cls_options); },
               "z.tsv:2: label 'positive'");
}

TEST(ClassificationDataset, FromCorpusOnSst2AndColaDev) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not present";
  testing::TempDir root;
  const DataOptions options = testing::shared_data_options(shared, root / "cache");
  const auto tokenizer = classification_tokenizer();
  const ClassificationDataset sst =
      ClassificationDataset::from_corpus(Corpus::open("sst-2", options), "valid", *tokenizer, {});
  EXPECT_EQ(sst.size(), 872);
  int64_t positives = 0;
  for (int64_t i = 0; i < sst.size(); ++i) positives += sst.label(i);
  EXPECT_EQ(positives, 444);
  const ClassificationDataset unlabeled = ClassificationDataset::from_corpus(
      Corpus::open("sst-2", options), "test_unlabeled", *tokenizer, {});
  EXPECT_EQ(unlabeled.size(), 1821);
  EXPECT_FALSE(unlabeled.labeled());
  EXPECT_EQ(unlabeled.label(0), kIgnoreIndex);
  const ClassificationDataset cola =
      ClassificationDataset::from_corpus(Corpus::open("cola", options), "valid", *tokenizer, {});
  EXPECT_EQ(cola.size(), 1043);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
