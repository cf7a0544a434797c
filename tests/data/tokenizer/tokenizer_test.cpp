// Byte, char and word tokenizers: round trips, vocabularies, special tokens, save/load.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/char_tokenizer.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using rota::testing::expect_error;
using testing::TempDir;

// Arbitrary bytes: every value 0..255, then random bytes (mostly invalid UTF-8).
std::string all_kinds_of_bytes() {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  Generator gen(7);
  for (int i = 0; i < 4000; ++i) bytes.push_back(static_cast<char>(gen.next_below(256)));
  bytes += "héllo wörld — ∑ 😀 \xC3\x28 \xED\xA0\x80 \xF4\x90\x80\x80 \xE0\x80\xAF";
  return bytes;
}

// Two tokenizers are equal when they agree on everything observable.
void expect_same_tokenizer(const Tokenizer& a, const Tokenizer& b, std::string_view sample) {
  EXPECT_EQ(a.kind(), b.kind());
  ASSERT_EQ(a.vocab_size(), b.vocab_size());
  EXPECT_EQ(a.specials(), b.specials());
  for (int64_t id = 0; id < a.vocab_size(); ++id)
    EXPECT_EQ(a.token_text(id), b.token_text(id)) << id;
  EXPECT_EQ(a.encode(sample), b.encode(sample));
  const std::vector<int64_t> ids = a.encode(sample);
  EXPECT_EQ(a.decode(ids), b.decode(ids));
}

TEST(SpecialTokens, NamesParseBothWays) {
  for (int i = 0; i < kSpecialTokenKinds; ++i) {
    const auto kind = static_cast<SpecialToken>(i);
    const std::string text = special_token_text(kind);
    EXPECT_EQ(parse_special_token(text), kind);
    EXPECT_EQ(parse_special_token(text.substr(1, text.size() - 2)), kind);
  }
  EXPECT_FALSE(parse_special_token("<foo>").has_value());
  EXPECT_THROW(parse_special_tokens({"pad", "<pad>"}), Error);
  expect_error([&] { parse_special_tokens({"padding"}); }, "padding");
}

TEST(SpecialTokens, RequireNamesTheMissingToken) {
  const ByteTokenizer tokenizer;
  expect_error([&] { tokenizer.specials().require(SpecialToken::kMask, "masked lm"); },
               {"masked lm", "<mask>"});
}

TEST(ByteTokenizer, RoundTripsArbitraryBytesExactly) {
  const ByteTokenizer tokenizer({SpecialToken::kPad, SpecialToken::kEos});
  const std::string bytes = all_kinds_of_bytes();
  const std::vector<int64_t> ids = tokenizer.encode(bytes);
  ASSERT_EQ(ids.size(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(ids[i], static_cast<unsigned char>(bytes[i]));
  }
  EXPECT_EQ(tokenizer.decode(ids), bytes);
  EXPECT_EQ(tokenizer.vocab_size(), 258);
  EXPECT_EQ(tokenizer.specials().id(SpecialToken::kPad), 256);
  EXPECT_EQ(tokenizer.specials().id(SpecialToken::kEos), 257);
  EXPECT_FALSE(tokenizer.specials().has(SpecialToken::kMask));
  const std::vector<int64_t> with_special = {'a', 257, 'b'};
  EXPECT_EQ(tokenizer.decode(with_special), "a<eos>b");
  const std::vector<int64_t> bad = {258};
  EXPECT_THROW(tokenizer.decode(bad), Error);
  EXPECT_EQ(tokenizer.token_text('A'), "A");
  EXPECT_EQ(tokenizer.token_text(0xFF), "<0xFF>");
}

TEST(ByteTokenizer, SaveLoad) {
  TempDir dir;
  const ByteTokenizer tokenizer({SpecialToken::kMask, SpecialToken::kCls, SpecialToken::kPad});
  tokenizer.save(dir.path());
  const auto loaded = load_tokenizer(dir.path());
  expect_same_tokenizer(tokenizer, *loaded, all_kinds_of_bytes());
  EXPECT_EQ(loaded->specials().id(SpecialToken::kCls), 257);
}

TEST(CharTokenizer, VocabularyIsSpecialsThenCharactersInCodePointOrder) {
  const std::string text = "baca\n€é\xFF";
  const auto tokenizer = CharTokenizer::train(text, {SpecialToken::kUnk});
  // <unk>, '\n', 'a', 'b', 'c', 'é' (U+E9), '€' (U+20AC), stray byte 0xFF.
  ASSERT_EQ(tokenizer->vocab_size(), 8);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kUnk), 0);
  EXPECT_EQ(tokenizer->token_text(1), "<0x0A>");
  EXPECT_EQ(tokenizer->token_text(2), "a");
  EXPECT_EQ(tokenizer->token_text(5), "é");
  EXPECT_EQ(tokenizer->token_text(6), "€");
  EXPECT_EQ(tokenizer->token_text(7), "<0xFF>");
  EXPECT_EQ(tokenizer->encode("€a\xFF"), (std::vector<int64_t>{6, 2, 7}));
}

TEST(CharTokenizer, RoundTripsUtf8AndStrayBytes) {
  const std::string text = all_kinds_of_bytes();
  const auto tokenizer = CharTokenizer::train(text);
  const std::vector<int64_t> ids = tokenizer->encode(text);
  EXPECT_EQ(tokenizer->decode(ids), text);
  // One id per character: multi-byte characters are one token each.
  const auto smiley = tokenizer->encode("😀é");
  EXPECT_EQ(smiley.size(), 2u);
}

TEST(CharTokenizer, UnknownCharacterIsUnkOrAClearError) {
  const auto with_unk = CharTokenizer::train("abc", {SpecialToken::kUnk});
  const int64_t unk = with_unk->specials().id(SpecialToken::kUnk);
  EXPECT_EQ(with_unk->encode("aéb"), (std::vector<int64_t>{1, unk, 2}));
  EXPECT_EQ(with_unk->decode(with_unk->encode("aéb")), "a<unk>b");

  const auto without = CharTokenizer::train("abc");
  EXPECT_EQ(without->vocab_size(), 3);
  expect_error([&] { without->encode("abé"); }, "U+00E9");
}

TEST(CharTokenizer, SaveLoad) {
  TempDir dir;
  const std::string text = all_kinds_of_bytes();
  const auto tokenizer = CharTokenizer::train(text, {SpecialToken::kPad, SpecialToken::kMask});
  tokenizer->save(dir.path());
  const auto loaded = load_tokenizer(dir.path());
  expect_same_tokenizer(*tokenizer, *loaded, text);
  EXPECT_EQ(loaded->decode(loaded->encode(text)), text);
}

TEST(WordTokenizer, EncodesWordsWithUnkAndEosPerLine) {
  const std::string train = " the cat sat\n the dog\n\n the end\n";
  const auto tokenizer = WordTokenizer::train(train);
  // <unk>, <eos>, then by frequency: the (3), then cat, sat, dog, end (1 each, first seen).
  ASSERT_EQ(tokenizer->vocab_size(), 7);
  EXPECT_EQ(tokenizer->token_text(0), "<unk>");
  EXPECT_EQ(tokenizer->token_text(1), "<eos>");
  EXPECT_EQ(tokenizer->token_text(2), "the");
  EXPECT_EQ(tokenizer->token_text(3), "cat");
  EXPECT_EQ(tokenizer->token_text(6), "end");
  const int64_t unk = 0, eos = 1;
  // Blank lines give a lone <eos>; a last line without '\n' still gets one.
  EXPECT_EQ(tokenizer->encode("the  bird\tsat\n\nend"),
            (std::vector<int64_t>{2, unk, 4, eos, eos, 6, eos}));
  EXPECT_EQ(tokenizer->encode(""), std::vector<int64_t>{});
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("the  bird\tsat\n\nend")),
            "the <unk> sat\n\nend\n");
  // A word spelled like a special token is that token (WikiText's literal <unk>).
  EXPECT_EQ(tokenizer->encode("<unk> cat"), (std::vector<int64_t>{unk, 3, eos}));
}

TEST(WordTokenizer, RoundTripIsWhitespaceNormalisation) {
  const std::string text =
      " = Valkyria Chronicles III = \n\n Senjō no Valkyria 3 : <unk> Chronicles \n";
  const auto tokenizer = WordTokenizer::train(text);
  EXPECT_EQ(tokenizer->decode(tokenizer->encode(text)),
            "= Valkyria Chronicles III =\n\nSenjō no Valkyria 3 : <unk> Chronicles\n");
}

TEST(WordTokenizer, MinFrequencyAndMaxSize) {
  const std::string text = "a a a b b c\nd a b\n";
  WordVocabOptions min2;
  min2.min_frequency = 2;
  const auto frequent = WordTokenizer::train(text, min2);
  EXPECT_EQ(frequent->vocab_size(), 4);  // <unk> <eos> a b
  EXPECT_EQ(frequent->find("c"), -1);
  EXPECT_EQ(frequent->encode("c")[0], frequent->specials().id(SpecialToken::kUnk));

  WordVocabOptions capped;
  capped.max_size = 3;
  capped.specials = {SpecialToken::kUnk, SpecialToken::kEos, SpecialToken::kPad,
                     SpecialToken::kMask};
  EXPECT_THROW(WordTokenizer::train(text, capped), Error);  // 4 specials > max 3
  capped.max_size = 5;
  const auto small = WordTokenizer::train(text, capped);
  EXPECT_EQ(small->vocab_size(), 5);
  EXPECT_EQ(small->token_text(4), "a");
  EXPECT_EQ(small->specials().id(SpecialToken::kMask), 3);

  WordVocabOptions no_unk;
  no_unk.specials = {SpecialToken::kEos};
  EXPECT_THROW(WordTokenizer::train(text, no_unk), Error);
}

TEST(WordTokenizer, WithoutEosNoLineMarkers) {
  WordVocabOptions options;
  options.specials = {SpecialToken::kUnk};
  const auto tokenizer = WordTokenizer::train("x y\nz\n", options);
  EXPECT_EQ(tokenizer->encode("x y\nz\n").size(), 3u);
}

TEST(WordTokenizer, SaveLoad) {
  TempDir dir;
  const std::string text = "the quick brown fox\njumps over the lazy dog\n<unk> é ∑ 😀\n";
  WordVocabOptions options;
  options.specials = {SpecialToken::kPad, SpecialToken::kUnk, SpecialToken::kEos,
                      SpecialToken::kMask, SpecialToken::kCls};
  const auto tokenizer = WordTokenizer::train(text, options);
  tokenizer->save(dir.path());
  EXPECT_TRUE(std::filesystem::exists(dir / "vocab.txt"));
  const auto loaded = load_tokenizer(dir.path());
  expect_same_tokenizer(*tokenizer, *loaded, text + "unseen words here\n");
}

TEST(LoadTokenizer, RejectsMissingOrForeignDirectories) {
  TempDir dir;
  EXPECT_THROW(load_tokenizer(dir.path()), Error);
  testing::write_bytes(dir / "tokenizer.json", "{\"format\": \"something-else\"}");
  EXPECT_THROW(load_tokenizer(dir.path()), Error);
  testing::write_bytes(dir / "tokenizer.json",
                       "{\"format\": \"rota.tokenizer\", \"version\": 99, \"kind\": \"byte\"}");
  expect_error([&] { load_tokenizer(dir.path()); }, "version 99");
  testing::write_bytes(dir / "tokenizer.json", "not json");
  EXPECT_THROW(load_tokenizer(dir.path()), Error);
  // Found by fuzz/rota_tokenizer_fuzzer: a format or version of the wrong type threw
  // nlohmann::json's type_error from the header check.
  testing::write_bytes(dir / "tokenizer.json", R"({"format": 1, "version": 1, "kind": "byte"})");
  expect_error([&] { load_tokenizer(dir.path()); }, "not a Rota tokenizer");
  testing::write_bytes(dir / "tokenizer.json",
                       R"({"format": "rota.tokenizer", "version": "1", "kind": "byte"})");
  expect_error([&] { load_tokenizer(dir.path()); }, "no integer \"version\"");
}

// Found by fuzz/rota_tokenizer_fuzzer: a field missing or of the wrong type escaped the loaders
// as nlohmann::json's exceptions instead of rota::Error.
TEST(LoadTokenizer, MissingOrMistypedFieldsAreClearErrors) {
  TempDir dir;
  const std::string head = R"({"format": "rota.tokenizer", "version": 1, )";
  const std::pair<std::string, std::string> cases[] = {
      {R"("kind": "char", "vocab_size": 3})", "a field is missing or malformed"},
      {R"("kind": "char", "characters": ["a"], "vocab_size": 1})", "must be an integer"},
      {R"("kind": "byte", "vocab_size": "256"})", "must be an integer"},
      {R"("kind": "byte", "special_tokens": {"<unk>": "x"}, "vocab_size": 257})",
       "must be an integer"}};
  for (const auto& [rest, reason] : cases) {
    testing::write_bytes(dir / "tokenizer.json", head + rest);
    expect_error([&] { load_tokenizer(dir.path()); }, {"tokenizer.json", reason});
  }
}

// Found by fuzz/rota_tokenizer_fuzzer: get<int64_t> on a JSON float converts by a cast, undefined
// behaviour out of range (UBSan: 6.67e+19 outside the range of long). Integers are checked now.
TEST(LoadTokenizer, NumbersMustBeIntegersInRange) {
  TempDir dir;
  const std::string head = R"({"format": "rota.tokenizer", "version": 1, )";
  for (const std::string rest :
       {R"("kind": "char", "characters": [97, 66666666666666666697], "vocab_size": 2})",
        R"("kind": "char", "characters": [97.5], "vocab_size": 1})",
        R"("kind": "byte", "vocab_size": 1e300})",
        R"("kind": "byte", "vocab_size": 18446744073709551615})",
        R"("kind": "byte", "special_tokens": {"<unk>": -1e30}, "vocab_size": 257})"}) {
    testing::write_bytes(dir / "tokenizer.json", head + rest);
    expect_error([&] { load_tokenizer(dir.path()); }, "must be an integer");
  }
}

// A tokenizer.json names its companion file (vocab.txt, spm.model); only a file beside it is
// read, never /dev/zero (a hang) or a file elsewhere.
TEST(LoadTokenizer, CompanionFilesStayInTheDirectory) {
  TempDir dir;
  for (const std::string name : {"/dev/zero", "../vocab.txt", ".", "", "sub/vocab.txt"}) {
    const nlohmann::json config = {{"format", "rota.tokenizer"},
                                   {"version", 1},
                                   {"kind", "word"},
                                   {"vocab_size", 2},
                                   {"vocab_file", name}};
    testing::write_bytes(dir / "tokenizer.json", config.dump());
    expect_error([&] { load_tokenizer(dir.path()); },
                 {"\"vocab_file\" must name a file beside it"});
  }
  testing::write_bytes(dir / "tokenizer.json",
                       R"({"format": "rota.tokenizer", "version": 1, "kind": "sentencepiece",
                           "model_file": 7})");
  expect_error([&] { load_tokenizer(dir.path()); }, {"\"model_file\" must be a file name"});
}

TEST(TokenizerFactory, BuildsEachKindWithDefaults) {
  const std::string text = "to be or not to be\nthat is the question\n";
  TokenizerSpec spec;
  spec.kind = parse_tokenizer_kind("byte");
  EXPECT_EQ(build_tokenizer(spec, text)->vocab_size(), 256);
  spec.kind = parse_tokenizer_kind("char");
  EXPECT_EQ(build_tokenizer(spec, text)->vocab_size(),
            static_cast<int64_t>(std::set<char>(text.begin(), text.end()).size()));
  spec.kind = parse_tokenizer_kind("word");
  const auto word = build_tokenizer(spec, text);
  EXPECT_EQ(word->vocab_size(), 2 + 8);
  EXPECT_TRUE(word->specials().has(SpecialToken::kEos));
  spec.specials = parse_special_tokens({"unk", "eos", "pad", "mask", "cls"});
  EXPECT_EQ(build_tokenizer(spec, text)->specials().id(SpecialToken::kCls), 4);
  EXPECT_THROW(parse_tokenizer_kind("wordpiece"), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
