// Corpus search path, verification (with its record), verified download and local corpora.
#include <gtest/gtest.h>

#include <unistd.h>

#include "data/corpus/checksum_cache.h"
#include "data/corpus/corpus.h"
#include "data/corpus/download.h"
#include "data/corpus/locate.h"
#include "data/corpus/text_split.h"
#include "data/util/sha256.h"
#include "data/util/utf8.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_bytes;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A registered-style corpus made up by the test, with one file of the given content.
CorpusInfo test_corpus(const std::string& content, const std::string& url = "file:///nonexistent") {
  CorpusInfo corpus;
  corpus.name = "toy";
  corpus.format = CorpusFormat::kText;
  CorpusFile file;
  file.split = "train";
  file.file_name = "train.txt";
  file.url = url;
  file.sha256 = sha256_hex(content);
  file.bytes = static_cast<int64_t>(content.size());
  corpus.files = {file};
  return corpus;
}

TEST(DataOptions, SearchPathOrderFromTheEnvironment) {
  TempDir root;
  std::filesystem::create_directories(root / "work");
  std::filesystem::create_directories(root / "shared/data");
  const auto old_cwd = std::filesystem::current_path();
  std::filesystem::current_path(root / "work");
  {
    ScopedEnv data("ROTA_DATA", "/first/dir::/second/dir");
    ScopedEnv cache("XDG_CACHE_HOME", (root / "xdg").string());
    ScopedEnv offline("ROTA_OFFLINE", std::nullopt);
    const DataOptions options = default_data_options();
    ASSERT_GE(options.search_path.size(), 4u);
    EXPECT_EQ(options.search_path[0].dir, "/first/dir");
    EXPECT_EQ(options.search_path[0].origin, "$ROTA_DATA");
    EXPECT_EQ(options.search_path[1].dir, "/second/dir");
    EXPECT_EQ(options.search_path[2].dir, root / "xdg/rota/data");
    EXPECT_EQ(options.search_path[2].origin, "user cache");
    EXPECT_EQ(options.cache_dir, root / "xdg/rota/data");
    EXPECT_TRUE(std::filesystem::equivalent(options.search_path[3].dir, root / "shared/data"));
    EXPECT_TRUE(contains(options.search_path[3].origin, "current directory"));
    // Then the source tree's ../shared/data when it exists (it does in this checkout).
    if (!testing::shared_data_dir().empty()) {
      ASSERT_EQ(options.search_path.size(), 5u);
      EXPECT_TRUE(
          std::filesystem::equivalent(options.search_path[4].dir, testing::shared_data_dir()));
    }
    EXPECT_TRUE(options.allow_download);
  }
  {
    ScopedEnv data("ROTA_DATA", std::nullopt);
    ScopedEnv cache("XDG_CACHE_HOME", "");
    ScopedEnv home("HOME", (root / "home").string());
    ScopedEnv offline("ROTA_OFFLINE", "1");
    const DataOptions options = default_data_options();
    EXPECT_EQ(options.search_path[0].dir, root / "home/.cache/rota/data");
    EXPECT_EQ(options.cache_dir, root / "home/.cache/rota/data");
    EXPECT_FALSE(options.allow_download);
  }
  std::filesystem::current_path(old_cwd);
}

TEST(Locate, FirstDirectoryOnThePathWins) {
  TempDir root;
  const std::string content = "one two three\n";
  const CorpusInfo corpus = test_corpus(content);
  DataOptions options;
  options.search_path = {{root / "a", "first"}, {root / "b", "second"}};
  options.cache_dir = root / "cache";
  options.allow_download = false;
  write_bytes(root / "b/toy/train.txt", content);
  EXPECT_EQ(locate_corpus_file(corpus, corpus.files[0], options), root / "b/toy/train.txt");
  write_bytes(root / "a/toy/train.txt", content);
  EXPECT_EQ(locate_corpus_file(corpus, corpus.files[0], options), root / "a/toy/train.txt");
}

TEST(Locate, MissingEverywhereListsEveryPlaceAndTheFetchCommand) {
  TempDir root;
  const CorpusInfo corpus = test_corpus("x");
  DataOptions options;
  options.search_path = {{root / "a", "$ROTA_DATA"}, {root / "cache", "user cache"}};
  options.cache_dir = root / "cache";
  options.allow_download = false;
  expect_error(
      [&] { locate_corpus_file(corpus, corpus.files[0], options); },
      {(root / "a/toy/train.txt").string(), "($ROTA_DATA)", (root / "cache/toy/train.txt").string(),
       "(user cache)", "downloads are disabled", "rota data fetch toy"});
  // With downloads allowed, the failed download is explained as well.
  options.allow_download = true;
  expect_error([&] { locate_corpus_file(corpus, corpus.files[0], options); },
               {"file:///nonexistent", "rota data fetch toy"});
  EXPECT_FALSE(std::filesystem::exists(root / "cache/toy/train.txt"));
}

TEST(Locate, CorruptLocalCopyIsAnErrorWithExpectedAndGot) {
  TempDir root;
  const CorpusInfo corpus = test_corpus("the real content\n");
  write_bytes(root / "a/toy/train.txt", "tampered content\n");
  DataOptions options;
  options.search_path = {{root / "a", "first"}};
  options.cache_dir = root / "cache";
  options.allow_download = false;
  expect_error(
      [&] { locate_corpus_file(corpus, corpus.files[0], options); },
      {"expected sha256 " + corpus.files[0].sha256, "got " + sha256_hex("tampered content\n")});
  options.verify_checksums = false;
  EXPECT_EQ(locate_corpus_file(corpus, corpus.files[0], options), root / "a/toy/train.txt");
}

TEST(ChecksumRecord, VerifiedOnceThenTrustedUntilSizeOrMtimeChange) {
  TempDir root;
  const auto file = root / "data.txt";
  write_bytes(file, "abcdef");
  const std::string good = sha256_hex("abcdef");
  EXPECT_TRUE(verify_file_checksum(file, good, root / "cache"));
  const std::string record = read_file(root / "cache" / kChecksumRecordFile);
  EXPECT_TRUE(contains(record, good)) << record;
  EXPECT_TRUE(contains(record, std::filesystem::absolute(file).string())) << record;

  // Same size and mtime: the record is trusted (documented: the file is not re-hashed).
  const auto mtime = std::filesystem::last_write_time(file);
  write_bytes(file, "ABCDEF");
  std::filesystem::last_write_time(file, mtime);
  EXPECT_TRUE(verify_file_checksum(file, good, root / "cache"));
  // A new mtime forces a re-hash, which catches the change.
  std::filesystem::last_write_time(file, mtime + std::chrono::seconds(5));
  std::string got;
  EXPECT_FALSE(verify_file_checksum(file, good, root / "cache", &got));
  EXPECT_EQ(got, sha256_hex("ABCDEF"));
  // Without a cache directory every call hashes.
  EXPECT_TRUE(verify_file_checksum(file, sha256_hex("ABCDEF"), {}));
}

TEST(Download, FileUrlIsVerifiedAndRenamedIntoTheCache) {
  TempDir root;
  const std::string content = "downloaded bytes\nsecond line\n";
  write_bytes(root / "remote/train.txt", content);
  const std::string url = "file://" + (root / "remote/train.txt").string();
  const CorpusInfo corpus = test_corpus(content, url);
  DataOptions options;
  options.cache_dir = root / "cache";
  options.search_path = {{root / "empty", "first"}, {options.cache_dir, "user cache"}};
  const auto path = locate_corpus_file(corpus, corpus.files[0], options);
  EXPECT_EQ(path, root / "cache/toy/train.txt");
  EXPECT_EQ(read_file(path), content);
  // No temporary files are left next to it.
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "cache/toy")) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  // The next lookup finds the cached copy without downloading.
  std::filesystem::remove(root / "remote/train.txt");
  EXPECT_EQ(locate_corpus_file(corpus, corpus.files[0], options), path);
}

TEST(Download, ChecksumMismatchSavesNothingAndSaysExpectedVersusGot) {
  TempDir root;
  write_bytes(root / "remote/file.txt", "what the server sends\n");
  const std::string url = "file://" + (root / "remote/file.txt").string();
  const std::string expected = sha256_hex("what we expect\n");
  const auto dest = root / "cache/toy/file.txt";
  expect_error(
      [&] { download_verified(url, expected, dest); },
      {"expected sha256 " + expected, "got " + sha256_hex("what the server sends\n"), url});
  EXPECT_FALSE(std::filesystem::exists(dest));
  EXPECT_TRUE(std::filesystem::is_empty(root / "cache/toy"));
}

TEST(Download, PrefixIsPartOfTheCheckedFile) {
  TempDir root;
  write_bytes(root / "remote/body.tsv", "good film\t1\n");
  const std::string url = "file://" + (root / "remote/body.tsv").string();
  const std::string full = "sentence\tlabel\ngood film\t1\n";
  download_verified(url, sha256_hex(full), root / "out.tsv", "sentence\tlabel\n");
  EXPECT_EQ(read_file(root / "out.tsv"), full);
  EXPECT_THROW(download_verified("file://" + (root / "remote/missing").string(), sha256_hex(""),
                                 root / "out2.tsv"),
               Error);
}

TEST(FetchCorpus, UnknownNameListsTheRegisteredOnes) {
  expect_error([&] { fetch_corpus("wikitext-3", DataOptions{}); },
               "wikitext-2, tinyshakespeare, sst-2, cola");
}

TEST(Corpus, LocalDirectoryWithSplitFiles) {
  TempDir root;
  write_bytes(root / "c/train.txt", "train text\n");
  write_bytes(root / "c/validation.txt", "valid text\n");
  const Corpus corpus = Corpus::open((root / "c").string(), DataOptions{});
  EXPECT_EQ(corpus.format(), CorpusFormat::kText);
  EXPECT_EQ(corpus.splits(), (std::vector<std::string>{"train", "valid"}));
  EXPECT_EQ(corpus.read_text("valid"), "valid text\n");
  expect_error([&] { corpus.read_text("test"); }, "no split 'test'");
}

TEST(Corpus, LocalDirectoryOfTextFilesIsJoinedAndCutByCharacters) {
  TempDir root;
  // 'é' is two bytes but one character: the cut counts characters.
  write_bytes(root / "d/b.txt", "ééééé");
  write_bytes(root / "d/a.txt", std::string(14, 'a'));  // no final newline: one is added
  write_bytes(root / "d/notes.md", "ignored");
  const Corpus corpus = Corpus::open((root / "d").string(), DataOptions{});
  const std::string joined = std::string(14, 'a') + "\n" + "ééééé";  // 20 characters
  const std::string train = corpus.read_text("train");
  const std::string valid = corpus.read_text("valid");
  const std::string test = corpus.read_text("test");
  EXPECT_EQ(train + valid + test, joined);
  EXPECT_EQ(utf8_unit_count(train), 18);  // 20 * 90 / 100
  EXPECT_EQ(utf8_unit_count(valid), 1);   // 20 * 95 / 100 - 18
  EXPECT_EQ(valid, "é");
  EXPECT_EQ(test, "é");
}

TEST(Corpus, TextPiecesEndAtLineEndsAndJoinToTheSplit) {
  TempDir root;
  const std::string text = "ab\ncdefgh\ni\n\njklmnopqrstu\nv";
  write_bytes(root / "p/train.txt", text);
  const Corpus corpus = Corpus::open((root / "p").string(), DataOptions{});
  for (size_t limit : {1, 2, 3, 5, 8, 100}) {
    std::vector<std::string> pieces;
    corpus.for_each_text_piece("train", limit,
                               [&](std::string_view piece) { pieces.emplace_back(piece); });
    std::string joined;
    for (size_t i = 0; i < pieces.size(); ++i) {
      joined += pieces[i];
      EXPECT_FALSE(pieces[i].empty());
      if (i + 1 < pieces.size()) {
        EXPECT_EQ(pieces[i].back(), '\n') << "limit " << limit;
      }
      // Longer than the limit only when the piece is one line.
      if (pieces[i].size() > limit) {
        const size_t first_end = pieces[i].find('\n');
        EXPECT_TRUE(first_end == std::string::npos || first_end == pieces[i].size() - 1)
            << "limit " << limit << " piece '" << pieces[i] << "'";
      }
    }
    EXPECT_EQ(joined, text) << "limit " << limit;
  }
  std::vector<std::string> big;
  corpus.for_each_text_piece("train", 100, [&](std::string_view p) { big.emplace_back(p); });
  EXPECT_EQ(big, std::vector<std::string>{text});
  std::vector<std::string> by_eight;
  corpus.for_each_text_piece("train", 8, [&](std::string_view p) { by_eight.emplace_back(p); });
  EXPECT_EQ(by_eight,
            (std::vector<std::string>{"ab\n", "cdefgh\n", "i\n\n", "jklmnopqrstu\n", "v"}));
}

TEST(TextSplit, HoldOutTailByCharacters) {
  const std::string text = "abcdefghi\xC3\xA9";  // 10 characters, the last one two bytes
  const auto [head, tail] = hold_out_tail(text, 0.1);
  EXPECT_EQ(head, "abcdefghi");
  EXPECT_EQ(tail, "\xC3\xA9");
  EXPECT_EQ(hold_out_tail(text, 0.0).second, "");
  EXPECT_EQ(hold_out_tail(text, 1.0).first, "");
  EXPECT_THROW(hold_out_tail(text, 1.5), Error);
  EXPECT_EQ(cut_by_characters(text, 0, 90), "abcdefghi");
}

TEST(Corpus, LocalTsvFileAndDirectory) {
  TempDir root;
  write_bytes(root / "one.tsv", "sentence\tlabel\nfine\t1\n");
  const Corpus file = Corpus::open((root / "one.tsv").string(), DataOptions{});
  EXPECT_EQ(file.format(), CorpusFormat::kTsv);
  EXPECT_EQ(file.splits(), std::vector<std::string>{"train"});
  EXPECT_EQ(file.tsv_split("train").path, root / "one.tsv");
  EXPECT_THROW(file.read_text("train"), Error);

  write_bytes(root / "glue/train.tsv", "x");
  write_bytes(root / "glue/dev.tsv", "x");
  const Corpus dir = Corpus::open((root / "glue").string(), DataOptions{});
  EXPECT_EQ(dir.splits(), (std::vector<std::string>{"train", "valid"}));
  EXPECT_EQ(dir.tsv_split("valid").path, root / "glue/dev.tsv");

  expect_error([&] { Corpus::open((root / "nothing-here").string(), DataOptions{}); },
               "neither a registered corpus");
}

TEST(Corpus, TinyShakespeareSplitIs90By5By5Characters) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not present";
  TempDir root;
  const DataOptions options = testing::shared_data_options(shared, root / "cache");
  const Corpus corpus = Corpus::open("tinyshakespeare", options);
  const std::string whole = read_file(shared / "tinyshakespeare/input.txt");
  const std::string train = corpus.read_text("train");
  const std::string valid = corpus.read_text("valid");
  const std::string test = corpus.read_text("test");
  EXPECT_EQ(train + valid + test, whole);
  // ASCII, so characters are bytes: int(n * 0.9) as in nanoGPT, then 5 % each.
  const int64_t n = 1115394;
  ASSERT_EQ(static_cast<int64_t>(whole.size()), n);
  EXPECT_EQ(static_cast<int64_t>(train.size()), static_cast<int64_t>(n * 0.9));
  EXPECT_EQ(static_cast<int64_t>(valid.size()),
            static_cast<int64_t>(n * 0.95) - static_cast<int64_t>(n * 0.9));
  EXPECT_EQ(static_cast<int64_t>(train.size()), 1003854);
  // The first train character is the play's first line; every valid/test character occurs in train.
  EXPECT_EQ(train.substr(0, 14), "First Citizen:");
  for (char c : valid + test) ASSERT_NE(train.find(c), std::string::npos) << c;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
