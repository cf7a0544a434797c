// User file sources: records of every format, the held-out valid split, LM text pieces of whole
// records, content checks naming file:line, and streaming pieces of local corpora.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "data/corpus/corpus.h"
#include "data/corpus/symbol_search.h"
#include "data/dataset/file_examples.h"
#include "data/source/file_source.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::expect_error;
using testing::TempDir;
using testing::write_bytes;

std::vector<TextRecord> records(const FileSource& files, const std::string& split) {
  std::vector<TextRecord> all;
  files.for_each_record(split, [&](const TextRecord& r) { all.push_back(r); });
  return all;
}

std::vector<std::string> pieces(
    const std::function<void(const std::function<void(std::string_view)>&)>& run) {
  std::vector<std::string> all;
  run([&](std::string_view piece) { all.emplace_back(piece); });
  return all;
}

TEST(FileSource, JsonlRecordsAndTheirLanguageModelText) {
  TempDir root;
  write_bytes(root / "d/b.jsonl", "{\"text\": \"third\"}\n");
  write_bytes(root / "d/a.jsonl",
              "\xEF\xBB\xBF{\"text\": \"first\\nline\"}\n\n{\"text\": \"second\", \"x\": 1}");
  FileSourceSpec spec;
  spec.train = (root / "d").string();
  spec.valid = (root / "d/b.jsonl").string();
  const FileSource files(spec);
  const std::vector<TextRecord> train = records(files, "train");
  ASSERT_EQ(train.size(), 3u);
  EXPECT_EQ(train[0].text, "first\nline");  // a BOM at the start of a file is dropped
  EXPECT_EQ(train[1].origin(), (root / "d/a.jsonl").string() + ":3");  // the blank line counts
  EXPECT_EQ(train[2].origin(), (root / "d/b.jsonl").string() + ":1");
  // Each record's text then "\n"; pieces hold whole records even across embedded line breaks.
  const std::string all = "first\nline\nsecond\nthird\n";
  for (size_t limit : {1, 5, 11, 12, 18, 100}) {
    const auto got = pieces([&](const auto& v) { files.for_each_text_piece("train", limit, v); });
    std::string joined;
    for (const std::string& p : got) joined += p;
    EXPECT_EQ(joined, all) << limit;
    for (const std::string& p : got) {
      const bool one_record = p == "first\nline\n" || p == "second\n" || p == "third\n";
      EXPECT_TRUE(one_record || p.size() <= limit) << limit << " " << p;
      EXPECT_NE(p, "first\n");  // never a part of a record
    }
  }
  EXPECT_EQ(pieces([&](const auto& v) { files.for_each_text_piece("train", 12, v); }),
            (std::vector<std::string>{"first\nline\n", "second\n", "third\n"}));
}

TEST(FileSource, ValidationSplitIsHeldOutOfTheTrainingRecords) {
  TempDir root;
  std::string text;
  for (int i = 0; i < 45; ++i) text += "line " + std::to_string(i) + "\n";
  write_bytes(root / "a.txt", text);
  write_bytes(root / "b.txt", "tail line");  // no final newline: one is added
  FileSourceSpec spec;
  spec.train = (root / "*.txt").string();
  spec.valid_fraction = 0.1;
  const FileSource files(spec);
  EXPECT_EQ(files.splits(), (std::vector<std::string>{"train", "valid"}));
  // 46 records: floor(4.6) = 4 held out.
  EXPECT_EQ(files.check_all(), (std::vector<int64_t>{42, 4}));
  std::string valid;
  files.for_each_text_piece("valid", 1000, [&](std::string_view p) { valid += p; });
  EXPECT_EQ(valid, "line 42\nline 43\nline 44\ntail line\n");
  std::string train;
  files.for_each_text_piece("train", 7, [&](std::string_view p) { train += p; });
  EXPECT_EQ(train + valid, text + "tail line\n");
  // One record cannot be split.
  write_bytes(root / "one/x.txt", "only\n");
  FileSourceSpec tiny;
  tiny.train = (root / "one").string();
  expect_error([&] { FileSource(tiny).check_all(); }, {"1 records", "give data.files.valid"});
}

TEST(FileSource, CsvWithStringLabelsBecomesExamples) {
  TempDir root;
  write_bytes(root / "train.csv",
              "id,review,sentiment\r\n1,\"good, very\",pos\r\n2,\"bad\nreally \"\"bad\"\"\",neg\r\n"
              "3,fine,pos\r\n");
  write_bytes(root / "valid.csv", "review,sentiment,id\n\"ok\",neutral,4\n");
  FileSourceSpec spec;
  spec.train = (root / "train.csv").string();
  spec.valid = (root / "valid.csv").string();
  spec.fields = {"review", "", "sentiment"};
  const FileSource files(spec);
  EXPECT_EQ(record_labels(files, "train"), (std::vector<std::string>{"pos", "neg", "pos"}));
  const LabelMap labels = LabelMap::from_training_labels(record_labels(files, "train"), 2, "train");
  const std::vector<TextExample> train = file_examples(files, "train", &labels);
  ASSERT_EQ(train.size(), 3u);
  EXPECT_EQ(train[1].text, "bad\nreally \"bad\"");
  EXPECT_EQ(train[1].label, 0);                                      // neg < pos
  EXPECT_EQ(train[2].origin, (root / "train.csv").string() + ":5");  // after a 2-line record
  // Columns are found by header name in every file; a label outside the map names file:line.
  expect_error([&] { file_examples(files, "valid", &labels); },
               {(root / "valid.csv").string() + ":2", "\"neutral\"", "\"neg\", \"pos\""});
  spec.fields.text = "body";
  expect_error([&] { FileSource(spec).check_all(); },
               {"train.csv:1", "no column 'body'", "id, review, sentiment"});
}

TEST(FileSource, BadContentAndEmptySplitsAreRefusedWithFileAndLine) {
  TempDir root;
  write_bytes(root / "ok.txt", "fine\n");
  write_bytes(root / "nul.txt", std::string("text\nmore\0bin", 13));
  write_bytes(root / "latin1.txt", "caf\xE9\n");
  write_bytes(root / "empty.jsonl", "\n\n");
  write_bytes(root / "short.csv", "text,label\na,b,c\n");
  const auto check = [&](const std::string& train, const std::string& valid) {
    FileSourceSpec spec;
    spec.train = (root / train).string();
    spec.valid = (root / valid).string();
    spec.fields.label = "label";
    FileSource(spec).check_all();
  };
  expect_error([&] { check("ok.txt", "nul.txt"); }, {"nul.txt:2:5", "NUL byte"});
  expect_error([&] { check("ok.txt", "latin1.txt"); },
               {"latin1.txt:1:4", "bytes 0xE9 0x0A are not valid UTF-8"});
  expect_error([&] { check("ok.txt", "empty.jsonl"); }, {"valid", "empty.jsonl", "no records"});
  expect_error([&] { check("short.csv", "ok.txt"); }, {"short.csv:2", "3 fields", "header has 2"});
  // A column named twice (used or not) is refused rather than one of them read silently.
  write_bytes(root / "twice.csv", "text,label,text\na,b,c\n");
  expect_error([&] { check("twice.csv", "ok.txt"); },
               {"twice.csv:1", "names column 'text' twice (columns 1 and 3)"});
  write_bytes(root / "twice.tsv", "id\ttext\tlabel\tid\n1\ta\tb\t2\n");
  expect_error([&] { check("twice.tsv", "ok.txt"); },
               {"twice.tsv:1", "names column 'id' twice (columns 1 and 4)"});
  expect_error([&] { check("ok.txt", "missing.txt"); }, {"data.files.valid", "does not exist"});
  expect_error([&] { check("ok.txt", "nul.dat"); }, {"nul.dat", "does not exist"});
  write_bytes(root / "data.dat", "x\n");
  expect_error([&] { check("ok.txt", "data.dat"); }, {"data.dat", "set data.files.format"});
}

TEST(FileSource, UnknownCharactersAreLocatedInRecords) {
  TempDir root;
  write_bytes(root / "t.jsonl", "{\"text\": \"abc\"}\n{\"text\": \"ab\\nxa\\u00e9\"}\n");
  FileSourceSpec spec;
  spec.train = (root / "t.jsonl").string();
  spec.valid = spec.train;
  const Corpus corpus = Corpus::open_files(spec);
  const auto found = find_symbol(corpus, "valid", [](std::string_view c) { return c == "é"; });
  ASSERT_TRUE(found.has_value());
  // Record on line 2; the field's text has a line break, so the character is on its line 3.
  EXPECT_EQ(found->where(), (root / "t.jsonl").string() + ":3:3 (in field 'text')");
  EXPECT_EQ(describe_symbol(found->character), "'é' (U+00E9)");
  EXPECT_EQ(describe_symbol("\xFF"), "byte 0xFF");
  EXPECT_FALSE(find_symbol(corpus, "train", [](std::string_view c) { return c == "z"; }));
}

TEST(CorpusStreaming, LocalPiecesMatchTheWholeTextForEveryCut) {
  TempDir root;
  // Two files, the first without a final newline, multi-byte characters and a stray byte.
  std::string first;
  for (int i = 0; i < 300; ++i)
    first += (i % 7 == 0 ? "é€" : "ab") + std::string(i % 5, 'x') + "\n";
  first += "no newline \xFF";
  write_bytes(root / "d/a.txt", first);
  write_bytes(root / "d/b.txt", "second file\n\n€€€\n");
  write_bytes(root / "one.txt", first);
  for (const fs::path& source : {root / "d", root / "one.txt"}) {
    const Corpus corpus = Corpus::open(source.string(), DataOptions{});
    for (const std::string& split : corpus.splits()) {
      const std::string whole = corpus.read_text(split);
      for (size_t limit : {1, 9, 64, 1000, 100000}) {
        // The reference: the old whole-text algorithm (longest line-aligned prefix <= limit).
        std::vector<std::string> expected;
        for (size_t begin = 0; begin < whole.size();) {
          size_t end = whole.size();
          if (whole.size() - begin > limit) {
            const size_t within = whole.rfind('\n', begin + limit - 1);
            if (within != std::string::npos && within >= begin) {
              end = within + 1;
            } else {
              const size_t next = whole.find('\n', begin + limit);
              end = next == std::string::npos ? whole.size() : next + 1;
            }
          }
          expected.push_back(whole.substr(begin, end - begin));
          begin = end;
        }
        EXPECT_EQ(pieces([&](const auto& v) { corpus.for_each_text_piece(split, limit, v); }),
                  expected)
            << source << " " << split << " " << limit;
      }
    }
  }
}

// The text of a split's document pieces and the offsets in it where documents end.
struct MarkedText {
  std::string text;
  std::vector<size_t> ends;
};

MarkedText marked(
    const std::function<void(const std::function<void(std::string_view, bool)>&)>& run) {
  MarkedText result;
  run([&](std::string_view piece, bool ends) {
    result.text += piece;
    if (ends) result.ends.push_back(result.text.size());
  });
  return result;
}

TEST(SourceDocuments, RecordsAndFilesOfDataFiles) {
  TempDir root;
  write_bytes(root / "d/a.jsonl", "{\"text\": \"first\\nline\"}\n{\"text\": \"second\"}\n");
  write_bytes(root / "d/b.jsonl", "{\"text\": \"third\"}\n");
  FileSourceSpec spec;
  spec.train = (root / "d").string();
  spec.valid = (root / "d/b.jsonl").string();
  const FileSource files(spec);
  const std::string all = "first\nline\nsecond\nthird\n";
  for (size_t limit : {1, 7, 100}) {
    const MarkedText records = marked([&](const auto& v) {
      files.for_each_document_piece("train", limit, DocumentBoundary::kRecords, v);
    });
    EXPECT_EQ(records.text, all);
    EXPECT_EQ(records.ends, (std::vector<size_t>{11, 18, 24})) << limit;  // after each record
    const MarkedText by_file = marked([&](const auto& v) {
      files.for_each_document_piece("train", limit, DocumentBoundary::kFiles, v);
    });
    EXPECT_EQ(by_file.text, all);
    EXPECT_EQ(by_file.ends, (std::vector<size_t>{18, 24})) << limit;  // after a.jsonl, b.jsonl
    // Corpus::open_files hands its documents on unchanged.
    const Corpus corpus = Corpus::open_files(spec);
    const MarkedText through_corpus = marked([&](const auto& v) {
      corpus.for_each_document_piece("train", limit, DocumentBoundary::kFiles, v);
    });
    EXPECT_EQ(through_corpus.text, by_file.text);
    EXPECT_EQ(through_corpus.ends, by_file.ends);
  }
}

TEST(SourceDocuments, AHeldOutSplitEndsTheFilesItHoldsPartsOf) {
  TempDir root;
  write_bytes(root / "a.txt", "a1\na2\na3\n");
  write_bytes(root / "b.txt", "b1\nb2\n");
  FileSourceSpec spec;
  spec.train = (root / "*.txt").string();
  spec.valid_fraction = 0.4;  // floor(5 × 0.4) = 2 records held out: b1, b2
  const FileSource files(spec);
  const auto documents = [&](const std::string& split) {
    return marked([&](const auto& v) {
      files.for_each_document_piece(split, 100, DocumentBoundary::kFiles, v);
    });
  };
  EXPECT_EQ(documents("train").text, "a1\na2\na3\n");
  EXPECT_EQ(documents("train").ends, (std::vector<size_t>{9}));
  EXPECT_EQ(documents("valid").text, "b1\nb2\n");
  EXPECT_EQ(documents("valid").ends, (std::vector<size_t>{6}));
}

// A directory corpus cut 90/5/5: each split's documents end exactly at the ends of the files
// inside its part of the joined text (after the line break the join adds to a file without
// one), and at the split's end.
TEST(SourceDocuments, FilesOfACutDirectoryCorpus) {
  TempDir root;
  std::vector<std::string> contents;
  for (int f = 0; f < 12; ++f) {
    std::string text;
    for (int i = 0; i < 3 + f % 4; ++i) text += "file " + std::to_string(f) + " line\n";
    if (f == 4) text += "no newline";  // joined with an added '\n'
    contents.push_back(text);
    write_bytes(root / fmt::format("d/{:02}.txt", f), text);
  }
  std::string whole;
  std::vector<size_t> file_ends;  // offsets in the joined text, after a '\n' the join adds
  for (size_t f = 0; f < contents.size(); ++f) {
    whole += contents[f];
    if (f + 1 < contents.size() && whole.back() != '\n') whole += '\n';
    file_ends.push_back(whole.size());
  }
  const Corpus corpus = Corpus::open((root / "d").string(), DataOptions{});
  size_t begin = 0;
  for (const char* split : {"train", "valid", "test"}) {
    const std::string text = corpus.read_text(split);
    ASSERT_EQ(whole.substr(begin, text.size()), text) << split;
    std::vector<size_t> expected;
    for (size_t end : file_ends) {
      if (end > begin && end < begin + text.size()) expected.push_back(end - begin);
    }
    expected.push_back(text.size());  // the split ends its last document
    for (size_t limit : {1, 10, 1000}) {
      const MarkedText got = marked([&](const auto& v) {
        corpus.for_each_document_piece(split, limit, DocumentBoundary::kFiles, v);
      });
      EXPECT_EQ(got.text, text) << split << " " << limit;
      EXPECT_EQ(got.ends, expected) << split << " " << limit;
    }
    begin += text.size();
  }
  EXPECT_EQ(begin, whole.size());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

TEST(CorpusStreaming, MemoryDoesNotGrowWithTheFile) {
  TempDir root;
  constexpr int64_t kLines = 1000000;  // 100 MB
  constexpr int64_t kFileBytes = kLines * 100;
  fs::create_directories(root / "big");
  {
    std::ofstream out(root / "big/train.txt", std::ios::binary);
    const std::string line = std::string(99, 'x') + "\n";
    for (int64_t i = 0; i < kLines; ++i) out << line;
  }
  const int64_t before = peak_rss_bytes();
  FileSourceSpec spec;
  spec.train = (root / "big/train.txt").string();
  spec.valid = spec.train;
  const Corpus local = Corpus::open((root / "big").string(), DataOptions{});
  const Corpus files = Corpus::open_files(spec);
  for (const Corpus* corpus : {&local, &files}) {
    int64_t total = 0;
    size_t largest = 0;
    corpus->for_each_text_piece("train", size_t{1} << 20, [&](std::string_view piece) {
      total += static_cast<int64_t>(piece.size());
      largest = std::max(largest, piece.size());
    });
    EXPECT_EQ(total, kFileBytes);
    EXPECT_LE(largest, size_t{1} << 20);
  }
  // Holding the file whole would raise the peak by ~100 MB.
  EXPECT_LT(peak_rss_bytes() - before, int64_t{24} << 20);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
