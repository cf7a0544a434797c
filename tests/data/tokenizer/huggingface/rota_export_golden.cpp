// Rota's byte, char and word tokenizers exported as tokenizer.hf.json: the reference (HF
// tokenizers, tools/tokenizer_goldens) encodes the exported files to Rota's own ids.
// The exported files are committed; ROTA_UPDATE_EXPORT_GOLDENS=1 rewrites them (then run
// make_goldens.py to re-encode them with the reference).
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/char_tokenizer.h"
#include "data/tokenizer/huggingface/hf_export.h"
#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "data/tokenizer/word_tokenizer.h"
#include "data/util/sha256.h"
#include "framework/base/file_io.h"
#include "tests/data/test_files.h"
#include "tests/support/source_tree.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

const std::filesystem::path kGoldenDir =
    std::filesystem::path(ROTA_SOURCE_DIR) / "tests" / "golden" / "tokenizers";

std::string ids_sha256(const std::vector<int64_t>& ids) {
  std::string bytes(ids.size() * 4, '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto v = static_cast<uint32_t>(ids[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((v >> (8 * b)) & 0xFF);
  }
  return sha256_hex(bytes);
}

// The tokenizers whose exports are committed: byte with every special token, char trained on
// Tiny Shakespeare with <unk> <mask>, word trained on WikiText-2 train capped at 8000 entries.
std::unique_ptr<Tokenizer> build(const std::string& kind, const std::filesystem::path& shared) {
  if (kind == "byte") {
    return std::make_unique<ByteTokenizer>(std::vector<SpecialToken>{
        SpecialToken::kPad, SpecialToken::kUnk, SpecialToken::kBos, SpecialToken::kEos,
        SpecialToken::kMask, SpecialToken::kCls, SpecialToken::kSep});
  }
  if (kind == "char") {
    return CharTokenizer::train(read_file(shared / "tinyshakespeare" / "input.txt"),
                                {SpecialToken::kUnk, SpecialToken::kMask});
  }
  WordVocabOptions options;
  options.max_size = 8000;
  return WordTokenizer::train(read_file(shared / "wikitext-2" / "train.txt"), options);
}

class RotaExportGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(RotaExportGolden, ReferenceGivesRotasIds) {
  const std::filesystem::path shared = testing::shared_data_dir();
  if (shared.empty()) GTEST_SKIP() << "../shared/data not found";
  const auto tokenizer = build(GetParam(), shared);
  testing::TempDir dir;
  tokenizer->save(dir.path());
  const std::string exported = read_file(dir.path() / hf::kHuggingFaceExportFile);
  const std::filesystem::path committed = kGoldenDir / "rota_export" / (GetParam() + ".json");
  if (std::getenv("ROTA_UPDATE_EXPORT_GOLDENS") != nullptr)
    testing::write_bytes(committed, exported);
  ASSERT_EQ(exported, read_file(committed)) << "the export changed; see this file's header";

  const auto goldens = nlohmann::json::parse(read_file(kGoldenDir / "goldens.json"));
  const auto& expected = goldens.at("rota_export/" + GetParam());
  for (const auto& [corpus, want] : expected.at("corpora").items()) {
    const std::vector<int64_t> ids = tokenizer->encode(read_file(shared / corpus));
    EXPECT_EQ(static_cast<int64_t>(ids.size()), want.at("count").get<int64_t>()) << corpus;
    EXPECT_EQ(ids_sha256(ids), want.at("sha256").get<std::string>()) << corpus;
  }
  // The stress text, line by line, and the reference's decoding of those ids.
  const std::string stress = read_file(kGoldenDir / "stress.txt");
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < stress.size();) {
    size_t end = stress.find('\n', pos);
    end = end == std::string::npos ? stress.size() : end + 1;
    lines.push_back(stress.substr(pos, end - pos));
    pos = end;
  }
  const auto& stress_goldens = expected.at("stress");
  ASSERT_EQ(stress_goldens.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto want = stress_goldens[i].at("ids").get<std::vector<int64_t>>();
    EXPECT_EQ(tokenizer->encode(lines[i]), want) << "line " << i << ": " << lines[i];
    EXPECT_EQ(tokenizer->decode(want), stress_goldens[i].at("decoded").get<std::string>())
        << "line " << i;
  }
  // Rota's own reading of the exported file agrees too.
  const auto reread = HuggingFaceTokenizer::from_json(exported, "tokenizer.hf.json");
  EXPECT_EQ(reread->encode(stress), tokenizer->encode(stress));
}

INSTANTIATE_TEST_SUITE_P(Kinds, RotaExportGolden, ::testing::Values("byte", "char", "word"));

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
