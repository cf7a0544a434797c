// SHA-256 against the system's sha256sum, and the registry's checksums against the real files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "data/corpus/corpus_registry.h"
#include "data/util/sha256.h"
#include "framework/base/file_io.h"
#include "framework/tensor/random.h"
#include "tests/data/test_files.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

// The digest GNU coreutils' sha256sum prints for a file (an independent implementation).
std::string sha256sum(const std::filesystem::path& path) {
  const std::string command = "sha256sum '" + path.string() + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), &::pclose);
  EXPECT_NE(pipe, nullptr);
  char digest[65] = {0};
  EXPECT_EQ(std::fread(digest, 1, 64, pipe.get()), 64u) << command;
  return digest;
}

TEST(Sha256, MatchesSha256sumOnSmallInputs) {
  testing::TempDir dir;
  for (const std::string& text :
       {std::string(), std::string("abc"), std::string(55, 'x'), std::string(56, 'y'),
        std::string(64, 'z'), std::string("héllo\0world\n", 13)}) {
    const auto path = dir / "input";
    testing::write_bytes(path, text);
    const std::string expected = sha256sum(path);
    EXPECT_EQ(sha256_hex(text), expected) << "length " << text.size();
    EXPECT_EQ(sha256_file(path), expected);
  }
}

TEST(Sha256, MultiBlockFileAndIncrementalUpdates) {
  testing::TempDir dir;
  std::string bytes(3 * 1024 * 1024 + 12345, '\0');
  Generator gen(3);
  for (char& b : bytes) b = static_cast<char>(gen.next_below(256));
  const auto path = dir / "big.bin";
  testing::write_bytes(path, bytes);
  const std::string expected = sha256sum(path);
  EXPECT_EQ(sha256_file(path), expected);
  // Odd-sized pieces must give the same digest as one update.
  Sha256 hash;
  size_t pos = 0;
  for (size_t piece = 1; pos < bytes.size(); piece = piece * 3 + 1) {
    const size_t n = std::min(piece % 100003, bytes.size() - pos);
    hash.update(bytes.data() + pos, n);
    pos += n;
  }
  EXPECT_EQ(hash.hex_digest(), expected);
  EXPECT_THROW(hash.hex_digest(), Error);
  EXPECT_THROW(sha256_file(dir / "missing"), Error);
}

// The registry's sizes and checksums must be those of the real files and of the README table.
TEST(Sha256, RegistryMatchesSharedDataFilesAndReadme) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not present";
  const std::string readme = read_file(shared / "README.md");
  int checked = 0;
  for (const CorpusInfo& corpus : corpus_registry()) {
    for (const CorpusFile& file : corpus.files) {
      const auto path = shared / corpus.name / file.file_name;
      ASSERT_TRUE(std::filesystem::exists(path)) << path;
      EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(path)), file.bytes) << path;
      EXPECT_EQ(sha256_file(path), file.sha256) << path;
      // README row: | `shared/data/<corpus>/<file>` | ... | `<sha256>` |
      const std::regex row("`shared/data/" + corpus.name + "/" + file.file_name +
                           "`[^\\n]*`([0-9a-f]{64})`");
      std::smatch match;
      ASSERT_TRUE(std::regex_search(readme, match, row)) << file.file_name;
      EXPECT_EQ(match[1].str(), file.sha256) << path;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 11);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
