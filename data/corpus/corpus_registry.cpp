// The table of registered corpora (sizes and checksums as in ../shared/data/README.md).
#include "data/corpus/corpus_registry.h"

namespace rota::data {

namespace {

// Files are pinned to commits so the bytes, and thus the checksums, cannot change.
constexpr const char* kWikiTextBase =
    "https://raw.githubusercontent.com/pytorch/examples/77f55b912142e11fcfdf5b530231fb9c52f181e8/"
    "word_language_model/data/wikitext-2/";
constexpr const char* kShakespeareUrl =
    "https://raw.githubusercontent.com/karpathy/char-rnn/6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e/"
    "data/tinyshakespeare/input.txt";
constexpr const char* kGlueBase =
    "https://raw.githubusercontent.com/F0restL1n/BERT/0d0288be08079531c7b3a85af3d532f9adb0f13a/"
    "glue_data/";
constexpr const char* kSstTestLabeledUrl =
    "https://raw.githubusercontent.com/FreedomIntelligence/qnn/"
    "77f549372d4371e7f2d52e77bc18df5096dd4779/data/SST/Binary/sentiment-test";

// A registered file (fields in CorpusFile order).
CorpusFile file(std::string split, std::string name, std::string url, std::string sha256,
                int64_t bytes) {
  CorpusFile f;
  f.split = std::move(split);
  f.file_name = std::move(name);
  f.url = std::move(url);
  f.sha256 = std::move(sha256);
  f.bytes = bytes;
  return f;
}

// A TSV file without a header line, with these column names.
CorpusFile headerless(CorpusFile f, std::vector<std::string> columns) {
  f.columns = std::move(columns);
  return f;
}

CorpusFile unlabeled(CorpusFile f) {
  f.labeled = false;
  return f;
}

CorpusFile with_prefix(CorpusFile f, std::string prefix) {
  f.download_prefix = std::move(prefix);
  return f;
}

// A registered corpus: its name, description, format, note and files (the other fields keep
// their defaults).
CorpusInfo corpus(std::string name, std::string description, CorpusFormat format, std::string note,
                  std::vector<CorpusFile> files) {
  CorpusInfo c;
  c.name = std::move(name);
  c.description = std::move(description);
  c.format = format;
  c.note = std::move(note);
  c.files = std::move(files);
  return c;
}

// A GLUE single-sentence classification corpus: TSV, text in "sentence", label in "label".
CorpusInfo sentence_classification(std::string name, std::string description, std::string note,
                                   std::vector<CorpusFile> files) {
  CorpusInfo c = corpus(std::move(name), std::move(description), CorpusFormat::kTsv,
                        std::move(note), std::move(files));
  c.text_columns = {"sentence"};
  c.label_column = "label";
  return c;
}

std::vector<CorpusInfo> make_registry() {
  std::vector<CorpusInfo> registry;

  const std::string wikitext_base = kWikiTextBase;
  registry.push_back(
      corpus("wikitext-2", "WikiText-2 v1 (tokenized, with <unk>): word-level language modelling",
             CorpusFormat::kText,
             "word level; 2,088,628 / 217,646 / 245,569 tokens with <eos>; vocab 33,278",
             {
                 file("train", "train.txt", wikitext_base + "train.txt",
                      "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f", 10797148),
                 file("valid", "valid.txt", wikitext_base + "valid.txt",
                      "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8", 1121681),
                 file("test", "test.txt", wikitext_base + "test.txt",
                      "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0", 1256449),
             }));

  registry.push_back(
      corpus("tinyshakespeare", "Tiny Shakespeare (char-rnn): character-level language modelling",
             CorpusFormat::kText,
             "char level; one file split 90/5/5 % by characters into train/valid/test",
             {
                 file("all", "input.txt", kShakespeareUrl,
                      "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", 1115394),
             }));

  const std::string sst_base = std::string(kGlueBase) + "SST-2/";
  registry.push_back(sentence_classification(
      "sst-2", "SST-2 (GLUE): binary sentiment classification",
      "accuracy; test = the labelled SST test split (GLUE's test.tsv is test_unlabeled)",
      {
          file("train", "train.tsv", sst_base + "train.tsv",
               "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1", 3806081),
          file("valid", "dev.tsv", sst_base + "dev.tsv",
               "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0", 94931),
          // Not part of GLUE: the header line followed by the original labelled SST test split.
          with_prefix(
              file("test", "test_labeled.tsv", kSstTestLabeledUrl,
                   "12bc7dda4da070fc23fadf71a7cdf681bcaa32158260b7f8672cb216d520f7f7", 194803),
              "sentence\tlabel\n"),
          unlabeled(file("test_unlabeled", "test.tsv", sst_base + "test.tsv",
                         "69a938605609b3e6663b4487918fe1565eb293734e6e520d0366d1d412fd2a13",
                         197335)),
      }));

  const std::string cola_base = std::string(kGlueBase) + "CoLA/";
  const std::vector<std::string> cola_columns = {"source", "label", "mark", "sentence"};
  registry.push_back(sentence_classification(
      "cola", "CoLA (GLUE): binary acceptability classification",
      "Matthews correlation; test labels are hidden (GLUE)",
      {
          headerless(
              file("train", "train.tsv", cola_base + "train.tsv",
                   "cb368ebeb9f27d7ad03720d27ddc95687a311bdb100781a2fe59a5f5b1bc0624", 428590),
              cola_columns),
          headerless(
              file("valid", "dev.tsv", cola_base + "dev.tsv",
                   "8c013e21dc39957cac37378d87bebe225b694a0d5fe13eded66c2856628833fd", 53717),
              cola_columns),
          unlabeled(file("test", "test.tsv", cola_base + "test.tsv",
                         "3b4df85f7a9a0633574b38d181e18090ac961a24b18fb6bcd74999ddea8ad0b8",
                         48788)),
      }));
  return registry;
}

}  // namespace

const std::vector<CorpusInfo>& corpus_registry() {
  static const std::vector<CorpusInfo> registry = make_registry();
  return registry;
}

const CorpusInfo* find_corpus(std::string_view name) {
  for (const CorpusInfo& corpus : corpus_registry()) {
    if (corpus.name == name) return &corpus;
  }
  return nullptr;
}

std::string registered_corpus_names() {
  std::string names;
  for (const CorpusInfo& corpus : corpus_registry()) {
    if (!names.empty()) names += ", ";
    names += corpus.name;
  }
  return names;
}

const CorpusFile* find_corpus_file(const CorpusInfo& corpus, std::string_view split) {
  for (const CorpusFile& file : corpus.files) {
    if (file.split == split) return &file;
  }
  return nullptr;
}

}  // namespace rota::data
