// Each Hugging Face normalizer and pre-tokenizer alone against the reference on the stress
// lines (tests/golden/tokenizers/components.json, written by tools/tokenizer_goldens).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "data/tokenizer/huggingface/hf_normalizer.h"
#include "data/tokenizer/huggingface/hf_pre_tokenizer.h"
#include "framework/base/file_io.h"
#include "tests/support/source_tree.h"

namespace rota::data::hf {
namespace ROTA_TEST_FILE_NS {

const std::filesystem::path kGoldenDir =
    std::filesystem::path(ROTA_SOURCE_DIR) / "tests" / "golden" / "tokenizers";

std::vector<std::string> stress_lines() {
  const std::string text = read_file(kGoldenDir / "stress.txt");
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

const nlohmann::json& components() {
  static const nlohmann::json doc =
      nlohmann::json::parse(read_file(kGoldenDir / "components.json"));
  return doc;
}

TEST(HuggingFaceComponents, NormalizersEqualTheReference) {
  const std::vector<std::string> lines = stress_lines();
  const auto& list = components().at("normalizers");
  ASSERT_GE(list.size(), 17u);
  for (size_t i = 0; i < list.size(); ++i) {
    nlohmann::json config = list[i].at("config");
    if (config.contains("charsmap_of")) {
      const auto owner =
          nlohmann::json::parse(read_file(kGoldenDir / config["charsmap_of"].get<std::string>()));
      config["precompiled_charsmap"] =
          owner["normalizer"]["normalizers"][0]["precompiled_charsmap"];
    }
    const auto normalizer = parse_normalizer(config, {"components.json", "normalizers"});
    const auto& outputs = list[i].at("outputs");
    ASSERT_EQ(outputs.size(), lines.size());
    for (size_t l = 0; l < lines.size(); ++l) {
      std::string text = lines[l];
      normalizer->apply(text);
      EXPECT_EQ(text, outputs[l].get<std::string>())
          << config.dump().substr(0, 200) << " on line " << l;
    }
  }
}

TEST(HuggingFaceComponents, PreTokenizersEqualTheReference) {
  const std::vector<std::string> lines = stress_lines();
  const auto& list = components().at("pre_tokenizers");
  ASSERT_GE(list.size(), 27u);
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& config = list[i].at("config");
    const auto pre_tokenizer = parse_pre_tokenizer(config, {"components.json", "pre_tokenizers"});
    const auto& outputs = list[i].at("outputs");
    ASSERT_EQ(outputs.size(), lines.size());
    for (size_t l = 0; l < lines.size(); ++l) {
      std::vector<Piece> pieces{{lines[l], true}};
      pre_tokenizer->apply(pieces);
      std::vector<std::string> texts;
      for (const Piece& piece : pieces) texts.push_back(piece.text);
      EXPECT_EQ(texts, outputs[l].get<std::vector<std::string>>())
          << config.dump() << " on line " << l;
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data::hf
