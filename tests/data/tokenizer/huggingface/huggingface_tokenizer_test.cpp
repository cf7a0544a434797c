// Hugging Face tokenizer.json reading: refusals by name, malformed files, special-token roles,
// line separability, invalid UTF-8, save/load; open_tokenizer for every kind of path.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/huggingface/hf_export.h"
#include "data/tokenizer/huggingface/hf_regex.h"
#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "data/tokenizer/open_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"
#include "tests/support/source_tree.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

using nlohmann::json;
using rota::testing::expect_error;
using testing::TempDir;

const std::filesystem::path kGoldenDir =
    std::filesystem::path(ROTA_SOURCE_DIR) / "tests" / "golden" / "tokenizers";

// A small WordLevel tokenizer.json to modify in each test.
json base_document() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [
      {"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
      {"id": 1, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
      {"id": 2, "content": "[MASK]", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null, "decoder": null,
    "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "[PAD]": 1, "[MASK]": 2, "hello": 3, "world": 4}, "unk_token": "[UNK]"}
  })");
}

std::unique_ptr<HuggingFaceTokenizer> parse(const json& doc) {
  return HuggingFaceTokenizer::from_json(doc.dump(), "test/tokenizer.json");
}

TEST(HuggingFaceTokenizer, ReadsAWordLevelFile) {
  const auto tokenizer = parse(base_document());
  EXPECT_EQ(tokenizer->kind(), "huggingface");
  EXPECT_EQ(tokenizer->model_type(), "WordLevel");
  EXPECT_EQ(tokenizer->vocab_size(), 5);
  EXPECT_EQ(tokenizer->encode("hello world\nworld  hello there\n"),
            (std::vector<int64_t>{3, 4, 4, 3, 0}));
  // [MASK] is split out before pre-tokenization; lstrip takes the spaces before it.
  EXPECT_EQ(tokenizer->encode("hello   [MASK]world"), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(tokenizer->token_text(2), "[MASK]");
  EXPECT_EQ(tokenizer->decode(std::vector<int64_t>{3, 2, 4}), "hello [MASK] world");
  EXPECT_THROW(tokenizer->decode(std::vector<int64_t>{5}), Error);
}

TEST(HuggingFaceTokenizer, RefusesUnsupportedComponentsByName) {
  json doc = base_document();
  doc["normalizer"] = {{"type", "Nmt"}};
  expect_error([&] { parse(doc); }, {"test/tokenizer.json: normalizer.type 'Nmt' is not supported",
                                     "NFKC", "Precompiled"});

  doc = base_document();
  doc["pre_tokenizer"] = json::parse(
      R"({"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "CharDelimiterSplit", "delimiter": "x"}]})");
  expect_error([&] { parse(doc); },
               {"pre_tokenizer.pretokenizers[1].type 'CharDelimiterSplit' is not supported",
                "ByteLevel", "Metaspace"});

  doc = base_document();
  doc["decoder"] = {{"type", "CTC"}};
  expect_error([&] { parse(doc); }, {"decoder.type 'CTC' is not supported", "ByteFallback"});

  doc = base_document();
  doc["post_processor"] = {{"type", "Mystery"}};
  expect_error([&] { parse(doc); },
               {"post_processor.type 'Mystery' is not supported", "TemplateProcessing"});

  doc = base_document();
  doc["model"]["type"] = "Tiktoken";
  expect_error([&] { parse(doc); }, {"model.type 'Tiktoken' is not supported", "Unigram"});

  doc = base_document();
  doc["model"] = json::parse(R"({"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []})");
  expect_error([&] { parse(doc); }, {"model.dropout", "0.1", "not supported"});
}

TEST(HuggingFaceTokenizer, MalformedFilesNameTheFileAndThePath) {
  expect_error([] { HuggingFaceTokenizer::from_json("{\"model\": ", "broken.json"); },
               {"broken.json", "not valid JSON"});
  expect_error([] { HuggingFaceTokenizer::from_json("[1, 2]", "list.json"); },
               {"list.json", "must be a JSON object"});
  expect_error([] { HuggingFaceTokenizer::from_json("{}", "empty.json"); },
               {"empty.json", "has no \"model\""});
  json doc = base_document();
  doc["version"] = "2.0";
  expect_error([&] { parse(doc); }, {"version", "2.0"});
  doc = base_document();
  doc["added_tokens"][1]["id"] = "one";
  expect_error([&] { parse(doc); }, "test/tokenizer.json: added_tokens[1].id must be");
  doc = base_document();
  doc["model"]["vocab"] = json::array();
  expect_error([&] { parse(doc); }, "model.vocab must be an object");
  doc = base_document();
  doc["model"] = json::parse(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a c"]})");
  expect_error([&] { parse(doc); }, {"model.merges[0]", "'c' is not in the vocabulary"});
  doc = base_document();
  doc["model"] =
      json::parse(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]})");
  expect_error([&] { parse(doc); }, {"model.merges[0]", "merged token 'ab'"});
  doc = base_document();
  doc["model"] = json::parse(R"({"type": "Unigram", "vocab": [["a", -1.0], ["b"]], "unk_id": 0})");
  expect_error([&] { parse(doc); }, "model.vocab[1] must be [\"piece\", score]");
  doc = base_document();
  doc["pre_tokenizer"] = json::parse(
      R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})");
  expect_error([&] { parse(doc); },
               {"pre_tokenizer.pattern.Regex", "(unclosed", "does not compile"});
  doc = base_document();
  doc["pre_tokenizer"] =
      json::parse(R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"})");
  expect_error([&] { parse(doc); },
               {"pre_tokenizer.behavior", "'Sideways' is not a split behavior"});
  doc = base_document();
  doc["model"]["vocab"]["again"] = 3;
  expect_error([&] { parse(doc); }, {"model.vocab", "id 3 is given to both"});
  // Sequences nested 100,000 deep (read recursively, they would overflow the stack): refused.
  std::string deep = base_document().dump();
  deep.pop_back();
  deep += ", \"normalizer\": ";
  for (int i = 0; i < 100000; ++i) deep += "{\"type\": \"Sequence\", \"normalizers\": [";
  for (int i = 0; i < 100000; ++i) deep += "]}";
  deep += "}";
  expect_error([&] { HuggingFaceTokenizer::from_json(deep, "deep.json"); },
               {"deep.json", "more than 64 levels deep"});
  // 64 levels are read (a Sequence of Sequences of Lowercase).
  doc = base_document();
  json normalizer = json::parse(R"({"type": "Lowercase"})");
  for (int i = 0; i < 30; ++i) {
    normalizer = json{{"type", "Sequence"}, {"normalizers", json::array({normalizer})}};
  }
  doc["normalizer"] = normalizer;
  EXPECT_NO_THROW(parse(doc));
}

TEST(HuggingFaceTokenizer, RolesComeFromTheModelThePostProcessorAndTokenContents) {
  json doc = base_document();
  auto tokenizer = parse(doc);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kUnk), 0);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kPad), 1);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kMask), 2);
  EXPECT_FALSE(tokenizer->specials().has(SpecialToken::kCls));
  EXPECT_FALSE(tokenizer->specials().has(SpecialToken::kEos));
  expect_error([&] { tokenizer->specials().require(SpecialToken::kCls, "classifier"); },
               {"classifier", "<cls>"});

  doc["post_processor"] =
      json::parse(R"({"type": "BertProcessing", "sep": ["world", 4], "cls": ["hello", 3]})");
  tokenizer = parse(doc);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kCls), 3);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kSep), 4);

  doc["post_processor"] = json::parse(R"({"type": "Sequence", "processors": [{"type": "ByteLevel"},
      {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[PAD]", "type_id": 0}},
        {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[MASK]", "type_id": 0}}],
       "pair": [], "special_tokens": {"[PAD]": {"id": "[PAD]", "ids": [1], "tokens": ["[PAD]"]},
                                      "[MASK]": {"id": "[MASK]", "ids": [2], "tokens": ["[MASK]"]}}}]})");
  tokenizer = parse(doc);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kCls), 1);
  EXPECT_EQ(tokenizer->specials().id(SpecialToken::kSep), 2);

  // GPT-2: <|endoftext|> is <eos>; RoBERTa-style <s> </s> are bos/eos and cls/sep.
  const auto gpt2 = open_tokenizer(kGoldenDir / "gpt2_bpe.json");
  EXPECT_EQ(gpt2->specials().kinds(), std::vector<SpecialToken>{SpecialToken::kEos});
  EXPECT_EQ(gpt2->token_text(gpt2->specials().id(SpecialToken::kEos)), "<|endoftext|>");
  const auto unigram = open_tokenizer(kGoldenDir / "unigram_metaspace.json");
  EXPECT_EQ(unigram->specials().id(SpecialToken::kUnk), 0);
  EXPECT_EQ(unigram->specials().id(SpecialToken::kBos), 1);
  EXPECT_EQ(unigram->specials().id(SpecialToken::kEos), 2);
  EXPECT_EQ(unigram->specials().id(SpecialToken::kMask), 3);
  EXPECT_EQ(unigram->specials().id(SpecialToken::kCls), 1);
  EXPECT_EQ(unigram->specials().id(SpecialToken::kSep), 2);  // the template's trailing </s>
  const auto bert = open_tokenizer(kGoldenDir / "bert_wordpiece.json");
  for (const auto& [kind, text] :
       std::vector<std::pair<SpecialToken, std::string>>{{SpecialToken::kPad, "[PAD]"},
                                                         {SpecialToken::kUnk, "[UNK]"},
                                                         {SpecialToken::kCls, "[CLS]"},
                                                         {SpecialToken::kSep, "[SEP]"},
                                                         {SpecialToken::kMask, "[MASK]"}}) {
    EXPECT_EQ(bert->token_text(bert->specials().id(kind)), text);
  }
}

TEST(HuggingFaceTokenizer, EncodingIsLineSeparableAndParallelEqualsSequential) {
  const auto tokenizer = open_tokenizer(kGoldenDir / "gpt2_bpe.json");
  std::string text;
  for (int i = 0; text.size() < 300000; ++i) {
    text += " The quick brown fox " + std::to_string(i * 7919) + " jumps over the lazy dog.";
    if (i % 3 == 0) text += "\n";
    if (i % 11 == 0) text += "\n \n";
  }
  std::vector<int64_t> by_line;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    const auto ids = tokenizer->encode(text.substr(pos, end - pos));
    by_line.insert(by_line.end(), ids.begin(), ids.end());
    pos = end;
  }
  EXPECT_EQ(tokenizer->encode(text), by_line);  // long: encoded by several threads
  const size_t cut = text.find('\n', text.size() / 2) + 1;
  auto halves = tokenizer->encode(text.substr(0, cut));
  const auto second = tokenizer->encode(text.substr(cut));
  halves.insert(halves.end(), second.begin(), second.end());
  EXPECT_EQ(halves, by_line);
}

TEST(HuggingFaceTokenizer, InvalidUtf8IsReadAsReplacementCharacters) {
  const auto tokenizer = open_tokenizer(kGoldenDir / "gpt2_bpe.json");
  EXPECT_EQ(tokenizer->encode("a\xFF"
                              "b\xE2\x82"),
            tokenizer->encode("a\xEF\xBF\xBD"
                              "b\xEF\xBF\xBD"));
}

TEST(HuggingFaceTokenizer, SaveWritesTheFileItWasReadFrom) {
  const std::string text = read_file(kGoldenDir / "llama3_bpe.json");
  const auto tokenizer = HuggingFaceTokenizer::from_json(text, "llama3_bpe.json");
  TempDir dir;
  tokenizer->save(dir.path());
  EXPECT_EQ(read_file(dir.path() / "tokenizer.json"), text);
  const auto loaded = load_tokenizer(dir.path());
  EXPECT_EQ(loaded->kind(), "huggingface");
  EXPECT_EQ(loaded->specials(), tokenizer->specials());
  EXPECT_EQ(loaded->encode("Hello <|begin_of_text|> world\n"),
            tokenizer->encode("Hello <|begin_of_text|> world\n"));
}

TEST(HuggingFaceRegex, OnigurumaClassesAreRewritten) {
  EXPECT_EQ(hf::onig_to_pcre2(R"(\s+(?!\S))"), R"([\s\x{85}]+(?![^\s\x{85}]))");
  EXPECT_EQ(hf::onig_to_pcre2(R"([^\s\p{L}])"), R"([^\s\x{85}\p{L}])");
  EXPECT_EQ(hf::onig_to_pcre2(R"(\w+|\W)"),
            R"([\p{Alphabetic}\p{M}\p{N}\p{Pc}]+|[^\p{Alphabetic}\p{M}\p{N}\p{Pc}])");
  EXPECT_EQ(hf::onig_to_pcre2(R"([]\w] \d)"), R"([]\p{Alphabetic}\p{M}\p{N}\p{Pc}] \d)");
}

TEST(OpenTokenizer, AcceptsEveryKindOfPath) {
  TempDir dir;
  // A directory saved by Rota (old format, also read by load_tokenizer).
  const ByteTokenizer byte({SpecialToken::kEos});
  byte.save(dir / "byte");
  EXPECT_EQ(open_tokenizer(dir / "byte")->kind(), "byte");
  EXPECT_TRUE(std::filesystem::exists(dir / "byte" / hf::kHuggingFaceExportFile));
  // Rota's tokenizer.json named directly.
  EXPECT_EQ(open_tokenizer(dir / "byte" / "tokenizer.json")->kind(), "byte");
  // Rota's export opened as a Hugging Face file gives the same ids.
  const auto exported = open_tokenizer(dir / "byte" / hf::kHuggingFaceExportFile);
  EXPECT_EQ(exported->kind(), "huggingface");
  EXPECT_EQ(exported->encode("héllo\n"), byte.encode("héllo\n"));
  // A directory holding a Hugging Face tokenizer.json.
  std::filesystem::create_directories(dir / "hf");
  std::filesystem::copy_file(kGoldenDir / "bert_wordpiece.json", dir / "hf" / "tokenizer.json");
  EXPECT_EQ(open_tokenizer(dir / "hf")->kind(), "huggingface");
  // A Hugging Face *.json file.
  EXPECT_EQ(open_tokenizer(kGoldenDir / "unigram_metaspace.json")->kind(), "huggingface");
  // A SentencePiece .model trained elsewhere (spm_train): roles from the model's ids and pieces.
  const auto spm = open_tokenizer(kGoldenDir / "spm_t5_style.model");
  EXPECT_EQ(spm->kind(), "sentencepiece");
  EXPECT_EQ(spm->specials().id(SpecialToken::kPad), 0);
  EXPECT_EQ(spm->specials().id(SpecialToken::kEos), 1);
  EXPECT_EQ(spm->specials().id(SpecialToken::kUnk), 2);
  EXPECT_EQ(spm->specials().id(SpecialToken::kMask), 3);
  EXPECT_EQ(spm->specials().id(SpecialToken::kCls), 4);
  EXPECT_EQ(spm->specials().id(SpecialToken::kSep), 5);
  EXPECT_FALSE(spm->specials().has(SpecialToken::kBos));
}

TEST(OpenTokenizer, RefusesWhatIsNotATokenizer) {
  TempDir dir;
  expect_error([&] { open_tokenizer(dir / "missing"); },
               {"not a tokenizer: ", "missing", "no such file or directory"});
  expect_error([&] { open_tokenizer(dir.path()); }, {"not a tokenizer: ", "has no tokenizer.json"});
  testing::write_bytes(dir / "notes.txt", "hello");
  expect_error([&] { open_tokenizer(dir / "notes.txt"); },
               {"not a tokenizer: ", "notes.txt", "SentencePiece *.model"});
  testing::write_bytes(dir / "other.json", "{\"name\": 1}");
  expect_error([&] { open_tokenizer(dir / "other.json"); },
               {"not a tokenizer: ", "other.json", "neither"});
  testing::write_bytes(dir / "broken.json", "{\"model\"");
  expect_error([&] { open_tokenizer(dir / "broken.json"); },
               {"not a tokenizer: ", "not valid JSON"});
  testing::write_bytes(dir / "bad.model", "not a protobuf");
  expect_error([&] { open_tokenizer(dir / "bad.model"); }, {"not a tokenizer: ", "bad.model"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
