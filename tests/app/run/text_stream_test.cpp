// TextStream prints what one decode of the whole sequence prints: word spaces, UTF-8 over bytes.
#include <gtest/gtest.h>

#include "app/run/text_stream.h"
#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/word_tokenizer.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

std::string streamed(const data::Tokenizer& tokenizer, const std::vector<int64_t>& prompt,
                     const std::vector<int64_t>& generated, std::vector<std::string>* pieces) {
  TextStream stream(tokenizer, prompt);
  std::string out = stream.start();
  for (const int64_t id : generated) {
    const std::string piece = stream.push(id);
    if (pieces) pieces->push_back(piece);
    out += piece;
  }
  return out + stream.finish();
}

TEST(TextStream, WordsKeepTheirSpacesAndLineBreaks) {
  const auto words = data::WordTokenizer::train("the cat sat on the mat\na dog ran\n");
  std::vector<int64_t> prompt = words->encode("the cat");
  std::vector<int64_t> all = words->encode("the cat sat on the mat\na dog");
  prompt.pop_back();  // each encoded line ends in <eos>; keep the last line open
  all.pop_back();
  const std::vector<int64_t> generated(all.begin() + prompt.size(), all.end());
  std::vector<std::string> pieces;
  EXPECT_EQ(streamed(*words, prompt, generated, &pieces), words->decode(all));
  EXPECT_EQ(words->decode(all), "the cat sat on the mat\na dog");
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces[0], " sat");  // decoding the id alone would give "sat"
}

TEST(TextStream, ACharacterSplitOverByteTokensIsPrintedWhole) {
  const data::ByteTokenizer bytes;
  const std::vector<int64_t> all = bytes.encode("caf\xC3\xA9 \xE2\x82\xAC!");  // "café €!"
  std::vector<std::string> pieces;
  const std::vector<int64_t> prompt(all.begin(), all.begin() + 2);
  const std::vector<int64_t> generated(all.begin() + 2, all.end());
  EXPECT_EQ(streamed(bytes, prompt, generated, &pieces), bytes.decode(all));
  std::string joined;
  for (const std::string& piece : pieces) joined += piece;
  EXPECT_EQ(joined, "f\xC3\xA9 \xE2\x82\xAC!");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
