// tokenizer.json: the common header of every saved tokenizer.
#include "data/tokenizer/tokenizer_config.h"

#include <cstdint>
#include <limits>

#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data::detail {

nlohmann::json config_header(const Tokenizer& tokenizer) {
  nlohmann::json config;
  config["format"] = kTokenizerFormat;
  config["version"] = kTokenizerFormatVersion;
  config["kind"] = tokenizer.kind();
  config["vocab_size"] = tokenizer.vocab_size();
  nlohmann::json specials = nlohmann::json::object();
  for (SpecialToken kind : tokenizer.specials().kinds()) {
    specials[special_token_text(kind)] = tokenizer.specials().id(kind);
  }
  config["special_tokens"] = specials;
  return config;
}

void write_config(const std::filesystem::path& dir, const nlohmann::json& config) {
  std::filesystem::create_directories(dir);
  write_file_atomically(dir / kTokenizerConfigFile, config.dump(2) + "\n");
}

nlohmann::json read_config(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kTokenizerConfigFile;
  ROTA_CHECK(std::filesystem::exists(path), "tokenizer: {} not found (is {} a saved tokenizer?)",
             path.string(), dir.string());
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail("tokenizer: {} is not valid JSON: {}", path.string(), library_detail(e));
  }
  // value() throws when the field has another type: check the types first.
  ROTA_CHECK(config.is_object() && config.contains("format") && config["format"].is_string() &&
                 config["format"].get<std::string>() == kTokenizerFormat,
             "tokenizer: {} is not a Rota tokenizer (format tag '{}' expected)", path.string(),
             kTokenizerFormat);
  ROTA_CHECK(config.contains("version") && config["version"].is_number_integer(),
             "tokenizer: {} has no integer \"version\"", path.string());
  const int64_t version = integer_value(config["version"], "\"version\"");
  ROTA_CHECK(version == kTokenizerFormatVersion,
             "tokenizer: {} has format version {}, this build reads version {}", path.string(),
             version, kTokenizerFormatVersion);
  ROTA_CHECK(config.contains("kind") && config["kind"].is_string(), "tokenizer: {} has no \"kind\"",
             path.string());
  return config;
}

SpecialTokens special_tokens_from_config(const nlohmann::json& config) {
  SpecialTokens specials;
  if (!config.contains("special_tokens")) return specials;
  for (const auto& [text, id] : config["special_tokens"].items()) {
    const auto kind = parse_special_token(text);
    ROTA_CHECK(kind.has_value(), "tokenizer.json: unknown special token '{}'", text);
    specials.set(*kind, integer_value(id, "the id of special token " + text));
  }
  return specials;
}

int64_t integer_value(const nlohmann::json& value, const std::string& what) {
  ROTA_CHECK(
      value.is_number_integer() &&
          (!value.is_number_unsigned() ||
           value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())),
      "tokenizer.json: {} must be an integer, not {}", what, value.dump().substr(0, 64));
  return value.get<int64_t>();
}

int64_t integer_field(const nlohmann::json& config, const std::string& key, int64_t fallback) {
  if (!config.is_object() || !config.contains(key)) return fallback;
  return integer_value(config[key], "\"" + key + "\"");
}

std::filesystem::path companion_file(const std::filesystem::path& dir, const nlohmann::json& config,
                                     const std::string& key, const std::string& fallback) {
  if (!config.contains(key)) return dir / fallback;
  const nlohmann::json& value = config[key];
  ROTA_CHECK(value.is_string(), "tokenizer: {}: \"{}\" must be a file name",
             (dir / kTokenizerConfigFile).string(), key);
  const std::string name = value.get<std::string>();
  ROTA_CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                 name.find('\0') == std::string::npos,
             "tokenizer: {}: \"{}\" must name a file beside it, not '{}'",
             (dir / kTokenizerConfigFile).string(), key, name.substr(0, 200));
  return dir / name;
}

void expect_kind(const nlohmann::json& config, const std::string& kind) {
  const std::string got = config.at("kind").get<std::string>();
  ROTA_CHECK(got == kind, "tokenizer: expected a '{}' tokenizer, tokenizer.json says '{}'", kind,
             got);
}

}  // namespace rota::data::detail
