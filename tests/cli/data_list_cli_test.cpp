// `rota data list` shows every registered file with its size and sha256 (as docs/data.md says).
#include <string>

#include <gtest/gtest.h>

#include "data/corpus/corpus_registry.h"
#include "tests/support/program.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

TEST(DataListCli, ShowsEveryRegisteredFileWithItsSizeAndSha256) {
  const testing::CommandResult r = testing::run_command(testing::built_rota() + " data list");
  ASSERT_EQ(r.code, 0) << r.output;
  int files = 0;
  for (const data::CorpusInfo& corpus : data::corpus_registry()) {
    EXPECT_NE(r.output.find(corpus.name + ": "), std::string::npos) << corpus.name;
    for (const data::CorpusFile& file : corpus.files) {
      ASSERT_EQ(file.sha256.size(), 64u) << file.file_name;
      EXPECT_NE(r.output.find("sha256 " + file.sha256), std::string::npos) << file.file_name;
      EXPECT_NE(r.output.find(" " + std::to_string(file.bytes) + " bytes"), std::string::npos)
          << file.file_name << " " << file.bytes;
      ++files;
    }
  }
  EXPECT_GE(files, 8);  // WikiText-2 (3), Tiny Shakespeare, SST-2 and CoLA splits
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
