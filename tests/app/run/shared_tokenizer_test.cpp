// Tokenizer files packed for the broadcast from rank 0, and the tokenizer rebuilt from them.
#include "app/run/shared_tokenizer.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "app/setup/tokenizer_setup.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "tests/support/expect_error.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;

TEST(PackFiles, RoundTripsNamesAndBinaryContents) {
  const std::map<std::string, std::string> files = {
      {"tokenizer.json", "{\"kind\": \"char\"}\n"},
      {"spm.model", std::string("\0\n\n7\nbinary", 12)},
      {"empty", ""}};
  EXPECT_EQ(unpack_files(pack_files(files)), files);
  EXPECT_TRUE(unpack_files(pack_files({})).empty());
}

TEST(PackFiles, MalformedStringsAreRefused) {
  for (const std::string& packed : {std::string("name-without-size"), std::string("a\n12\nshort"),
                                    std::string("a\nx1\nabc"), std::string("a\n\nabc")}) {
    expect_error([&] { unpack_files(packed); }, "malformed tokenizer files");
  }
}

TEST(TokenizerFiles, RebuildTheSameTokenizer) {
  data::TokenizerSpec spec;
  spec.kind = data::TokenizerKind::kByte;
  const std::shared_ptr<const data::Tokenizer> original = data::build_tokenizer(spec, "abc");
  const std::map<std::string, std::string> files = tokenizer_files(*original);
  EXPECT_FALSE(files.empty());
  const std::shared_ptr<const data::Tokenizer> copy = tokenizer_from_files(files);
  EXPECT_EQ(copy->vocab_size(), original->vocab_size());
  const std::string text = "Rota, \xc3\xa9t\xc3\xa9\n";
  EXPECT_EQ(copy->encode(text), original->encode(text));
  EXPECT_EQ(tokenizer_files(*copy), files);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
