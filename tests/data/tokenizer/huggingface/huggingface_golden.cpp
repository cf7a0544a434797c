// Hugging Face tokenizer.json files against the reference implementation: ids and decodes
// written by HF tokenizers 0.23.2 (Node bindings; tools/tokenizer_goldens/make_goldens.py
// --check finds them equal with 0.23.3 from PyPI) for a stress text, sample lines and whole
// corpora (count + sha256 of the ids).
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "data/tokenizer/open_tokenizer.h"
#include "data/util/sha256.h"
#include "framework/base/file_io.h"
#include "tests/data/test_files.h"
#include "tests/support/source_tree.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

const std::filesystem::path kGoldenDir =
    std::filesystem::path(ROTA_SOURCE_DIR) / "tests" / "golden" / "tokenizers";

const nlohmann::json& goldens() {
  static const nlohmann::json doc = nlohmann::json::parse(read_file(kGoldenDir / "goldens.json"));
  return doc;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

// The reference's hash: sha256 of the ids as little-endian uint32.
std::string ids_sha256(const std::vector<int64_t>& ids) {
  std::string bytes(ids.size() * 4, '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto v = static_cast<uint32_t>(ids[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((v >> (8 * b)) & 0xFF);
  }
  return sha256_hex(bytes);
}

// Where two id sequences part (for failure messages).
std::string first_difference(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return "equal";
  const auto around = [&](const std::vector<int64_t>& ids) {
    std::string text;
    for (size_t k = i; k < ids.size() && k < i + 8; ++k) text += std::to_string(ids[k]) + " ";
    return text;
  };
  return "first difference at " + std::to_string(i) + ": got [" + around(got) + "] want [" +
         around(want) + "]";
}

std::vector<int64_t> as_ids(const nlohmann::json& list) {
  return list.get<std::vector<int64_t>>();
}

class HuggingFaceGolden : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Tokenizer> tokenizer() const {
    return open_tokenizer(kGoldenDir / (GetParam() + ".json"));
  }
  const nlohmann::json& golden() const { return goldens().at(GetParam()); }
};

TEST_P(HuggingFaceGolden, StressTextLineByLine) {
  const auto tokenizer = this->tokenizer();
  EXPECT_EQ(tokenizer->kind(), "huggingface");
  const std::vector<std::string> lines = split_lines(read_file(kGoldenDir / "stress.txt"));
  const nlohmann::json& expected = golden().at("stress");
  ASSERT_EQ(lines.size(), expected.size());
  std::vector<int64_t> all;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::vector<int64_t> ids = as_ids(expected[i].at("ids"));
    const std::vector<int64_t> got = tokenizer->encode(lines[i]);
    EXPECT_EQ(got, ids) << "line " << i << ": " << lines[i] << "\n" << first_difference(got, ids);
    EXPECT_EQ(tokenizer->decode(ids), expected[i].at("decoded").get<std::string>())
        << "line " << i << ": " << lines[i];
    all.insert(all.end(), ids.begin(), ids.end());
  }
  // Line-separable: the whole text is the concatenation of its lines.
  EXPECT_EQ(tokenizer->encode(read_file(kGoldenDir / "stress.txt")), all);
}

TEST_P(HuggingFaceGolden, SampleLines) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not found";
  const auto tokenizer = this->tokenizer();
  const std::vector<std::string> lines =
      split_lines(read_file(shared / "wikitext-2" / "valid.txt"));
  for (const auto& sample : golden().at("sample")) {
    const std::string& line = lines.at(sample.at("line").get<size_t>());
    const std::vector<int64_t> ids = as_ids(sample.at("ids"));
    EXPECT_EQ(tokenizer->encode(line), ids) << line;
    EXPECT_EQ(tokenizer->decode(ids), sample.at("decoded").get<std::string>()) << line;
  }
}

TEST_P(HuggingFaceGolden, WholeCorpora) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not found";
  const auto tokenizer = this->tokenizer();
  for (const auto& [corpus, expected] : golden().at("corpora").items()) {
    const std::vector<int64_t> ids = tokenizer->encode(read_file(shared / corpus));
    EXPECT_EQ(static_cast<int64_t>(ids.size()), expected.at("count").get<int64_t>()) << corpus;
    EXPECT_EQ(ids_sha256(ids), expected.at("sha256").get<std::string>()) << corpus;
  }
}

TEST_P(HuggingFaceGolden, SaveLoadRoundTrip) {
  const auto tokenizer = this->tokenizer();
  testing::TempDir dir;
  tokenizer->save(dir.path());
  const auto loaded = load_tokenizer(dir.path());
  EXPECT_EQ(loaded->kind(), "huggingface");
  EXPECT_EQ(loaded->vocab_size(), tokenizer->vocab_size());
  EXPECT_EQ(loaded->specials(), tokenizer->specials());
  const std::string stress = read_file(kGoldenDir / "stress.txt");
  EXPECT_EQ(loaded->encode(stress), tokenizer->encode(stress));
  EXPECT_EQ(read_file(dir.path() / "tokenizer.json"),
            read_file(kGoldenDir / (GetParam() + ".json")));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HuggingFaceGolden,
                         ::testing::Values("gpt2_bpe", "roberta_bpe", "llama3_bpe", "llama2_bpe",
                                           "bert_wordpiece", "bert_cased_variant",
                                           "bpe_subword_unk", "unigram_metaspace",
                                           "unigram_metaspace_never", "spm_precompiled_unigram",
                                           "wordlevel_variants"));

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
