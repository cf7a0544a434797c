// Internal: reading and writing tokenizer.json (shared by the tokenizer implementations).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "data/tokenizer/tokenizer.h"

namespace rota::data::detail {

/// Format tag and version written into every tokenizer.json.
inline constexpr const char* kTokenizerFormat = "rota.tokenizer";
inline constexpr int kTokenizerFormatVersion = 1;

/// The common fields: format, version, kind, vocab_size and special_tokens {"<pad>": id, ...}.
nlohmann::json config_header(const Tokenizer& tokenizer);
/// Writes config (pretty-printed) as dir/tokenizer.json, atomically; creates dir.
void write_config(const std::filesystem::path& dir, const nlohmann::json& config);
/// Reads dir/tokenizer.json and checks the format tag and version.
nlohmann::json read_config(const std::filesystem::path& dir);
/// The "special_tokens" object of a config as a SpecialTokens table.
SpecialTokens special_tokens_from_config(const nlohmann::json& config);
/// `value` as an int64: a JSON integer within int64's range, else rota::Error naming `what`
/// (nlohmann's get<int64_t> casts a float, which is undefined behaviour when out of range).
int64_t integer_value(const nlohmann::json& value, const std::string& what);
/// The integer config[key] (checked as above), or `fallback` when the key is absent.
int64_t integer_field(const nlohmann::json& config, const std::string& key, int64_t fallback);
/// The companion file `config[key]` names (default `fallback`) inside `dir`: a plain file name,
/// so that a tokenizer.json cannot make the loader read /dev/zero or a file elsewhere.
std::filesystem::path companion_file(const std::filesystem::path& dir, const nlohmann::json& config,
                                     const std::string& key, const std::string& fallback);
/// Checks that the config is of the expected kind (a clear error otherwise).
void expect_kind(const nlohmann::json& config, const std::string& kind);

}  // namespace rota::data::detail
