// Glob matching, split path expansion (files, directories, patterns) and formats by extension.
#include <gtest/gtest.h>

#include "data/source/file_format.h"
#include "data/source/path_patterns.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::expect_error;
using testing::TempDir;
using testing::write_bytes;

TEST(GlobMatch, StarQuestionAndSets) {
  EXPECT_TRUE(glob_match("*.txt", "a.txt"));
  EXPECT_TRUE(glob_match("*.txt", ".txt"));
  EXPECT_FALSE(glob_match("*.txt", "a.txt.bak"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYYb"));
  EXPECT_TRUE(glob_match("part-?.jsonl", "part-7.jsonl"));
  EXPECT_FALSE(glob_match("part-?.jsonl", "part-17.jsonl"));
  EXPECT_TRUE(glob_match("[ab]x", "bx"));
  EXPECT_FALSE(glob_match("[ab]x", "cx"));
  EXPECT_TRUE(glob_match("[a-c][!0-9]", "bz"));
  EXPECT_FALSE(glob_match("[a-c][!0-9]", "b5"));
  EXPECT_TRUE(glob_match("[x", "[x"));  // an unterminated set is a literal '['
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("?", ""));
  // Many stars on a long non-matching name stay fast (no exponential backtracking).
  EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*b", std::string(2000, 'a')));
}

TEST(FileFormat, ByExtensionAndRefusals) {
  EXPECT_EQ(format_from_extension("x/a.TXT"), FileFormat::kText);
  EXPECT_EQ(format_from_extension("a.ndjson"), FileFormat::kJsonl);
  EXPECT_EQ(format_from_extension("a.csv"), FileFormat::kCsv);
  EXPECT_EQ(format_from_extension("a.tsv"), FileFormat::kTsv);
  EXPECT_EQ(format_from_extension("a.json"), std::nullopt);
  EXPECT_EQ(resolve_file_format("a.data", FileFormat::kCsv), FileFormat::kCsv);
  expect_error([] { resolve_file_format("dir/a.data", FileFormat::kAuto); },
               {"dir/a.data", "'.data'", "set data.files.format"});
  expect_error([] { resolve_file_format("train.jsonl", FileFormat::kText); },
               {"train.jsonl is JSON", "format: JSONL"});
  expect_error([] { refuse_structured_as_text("d/x.csv", "data.text_dir"); },
               {"d/x.csv is CSV data", "data.text_dir", "format: CSV"});
  refuse_structured_as_text("notes.txt", "data.text_dir");  // plain text passes
}

TEST(ExpandSplitPaths, FileDirectoryAndPatterns) {
  TempDir root;
  for (const char* name :
       {"c/b.txt", "c/a.txt", "c/notes.md", "c/.hidden.txt", "c/sub/z.txt", "j/2.jsonl",
        "j/1.jsonl", "j/x.csv", "k/p1/a.txt", "k/p2/a.txt", "k/q/a.txt"}) {
    write_bytes(root / name, "x\n");
  }
  const fs::path c = root / "c";
  EXPECT_EQ(expand_split_paths((c / "b.txt").string(), FileFormat::kAuto, "t"),
            std::vector<fs::path>{c / "b.txt"});
  // A directory: its files of the format in name order (not recursive, no hidden files).
  EXPECT_EQ(expand_split_paths(c.string(), FileFormat::kAuto, "t"),
            (std::vector<fs::path>{c / "a.txt", c / "b.txt"}));
  EXPECT_EQ(expand_split_paths((root / "j").string(), FileFormat::kJsonl, "t"),
            (std::vector<fs::path>{root / "j/1.jsonl", root / "j/2.jsonl"}));
  EXPECT_EQ(expand_split_paths((root / "j").string(), FileFormat::kAuto, "t").size(), 3u);
  // Patterns, sorted, wildcards in directories too.
  EXPECT_EQ(expand_split_paths((root / "c/*.txt").string(), FileFormat::kAuto, "t"),
            (std::vector<fs::path>{c / "a.txt", c / "b.txt"}));
  EXPECT_EQ(expand_split_paths((root / "k/p*/a.txt").string(), FileFormat::kAuto, "t"),
            (std::vector<fs::path>{root / "k/p1/a.txt", root / "k/p2/a.txt"}));
  EXPECT_EQ(expand_split_paths((root / "c/.h*").string(), FileFormat::kAuto, "t"),
            std::vector<fs::path>{c / ".hidden.txt"});
  // A relative pattern stays relative.
  const fs::path old = fs::current_path();
  fs::current_path(root / "");
  EXPECT_EQ(expand_split_paths("c/[ab].txt", FileFormat::kAuto, "t"),
            (std::vector<fs::path>{"c/a.txt", "c/b.txt"}));
  fs::current_path(old);

  expect_error(
      [&] { expand_split_paths((c / "*.jsonl").string(), FileFormat::kAuto, "data.files.train"); },
      {"data.files.train", "matches no file"});
  expect_error(
      [&] { expand_split_paths((c / "nope.txt").string(), FileFormat::kAuto, "data.files.valid"); },
      {"data.files.valid", "nope.txt", "does not exist"});
  expect_error([&] { expand_split_paths(c.string(), FileFormat::kCsv, "data.files.test"); },
               {"data.files.test", "has no CSV files"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
