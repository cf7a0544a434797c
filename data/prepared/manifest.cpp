// manifest.json of a prepared corpus: writing and strict parsing.
#include "data/prepared/manifest.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "framework/base/error.h"

namespace rota::data {

using nlohmann::json;

const SplitInfo* PreparedManifest::find_split(const std::string& name) const {
  for (const SplitInfo& split : splits) {
    if (split.name == name) return &split;
  }
  return nullptr;
}

std::string manifest_to_json(const PreparedManifest& manifest) {
  json splits = json::object();
  for (const SplitInfo& split : manifest.splits) {
    json shards = json::array();
    for (const ShardInfo& shard : split.shards) {
      shards.push_back({{"file", shard.file},
                        {"tokens", shard.tokens},
                        {"bytes", shard.bytes},
                        {"sha256", shard.sha256}});
    }
    splits[split.name] = {{"source", split.source},
                          {"text_bytes", split.text_bytes},
                          {"tokens", split.tokens},
                          {"shards", shards}};
  }
  json j = {{"format", kPreparedFormat},
            {"version", kPreparedVersion},
            {"source", manifest.source},
            {"tokenizer",
             {{"kind", manifest.tokenizer_kind},
              {"sha256", manifest.tokenizer_sha256},
              {"vocab_size", manifest.vocab_size},
              {"dir", kPreparedTokenizerDir}}},
            {"dtype", token_width_name(manifest.dtype)},
            {"splits", splits}};
  if (manifest.documents != DocumentBoundary::kNone) {
    j["documents"] = {{"boundary", document_boundary_name(manifest.documents)},
                      {"end_token", manifest.document_end_token}};
  }
  // The source names a path, which may hold bytes that are not UTF-8: shown as U+FFFD.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

template <typename T>
T field(const json& object, const char* key, const std::filesystem::path& path) {
  ROTA_CHECK(object.is_object() && object.contains(key), "data: {}: missing field '{}'",
             path.string(), key);
  try {
    return object.at(key).get<T>();
  } catch (const json::exception&) {
    fail("data: {}: field '{}' has the wrong type; prepare the corpus again", path.string(), key);
  }
}

}  // namespace

PreparedManifest manifest_from_json(const std::string& text, const std::filesystem::path& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail("data: {} is not valid JSON ({}); prepare the corpus again", path.string(), library_detail(e));
  }
  const std::string format = field<std::string>(j, "format", path);
  ROTA_CHECK(format == kPreparedFormat, "data: {}: format '{}', expected '{}'", path.string(),
             format, kPreparedFormat);
  const int version = field<int>(j, "version", path);
  ROTA_CHECK(version == kPreparedVersion,
             "data: {}: manifest version {}, this Rota reads version {}; prepare the corpus again "
             "with this Rota",
             path.string(), version, kPreparedVersion);
  PreparedManifest m;
  m.source = field<std::string>(j, "source", path);
  const json& tokenizer = j.contains("tokenizer") ? j["tokenizer"] : json();
  m.tokenizer_kind = field<std::string>(tokenizer, "kind", path);
  m.tokenizer_sha256 = field<std::string>(tokenizer, "sha256", path);
  m.vocab_size = field<int64_t>(tokenizer, "vocab_size", path);
  try {
    m.dtype = parse_token_width(field<std::string>(j, "dtype", path));
  } catch (const Error& e) {
    fail("data: {}: {}", path.string(), library_detail(e));
  }
  ROTA_CHECK(m.vocab_size > 0 && m.vocab_size <= (int64_t{1} << (8 * token_bytes(m.dtype))),
             "data: {}: vocab_size {} does not fit dtype {}", path.string(), m.vocab_size,
             token_width_name(m.dtype));
  if (j.contains("documents")) {
    const json& documents = j["documents"];
    const std::string boundary = field<std::string>(documents, "boundary", path);
    const std::optional<DocumentBoundary> parsed = parse_document_boundary(boundary);
    ROTA_CHECK(parsed && *parsed != DocumentBoundary::kNone,
               "data: {}: unknown document boundary '{}'", path.string(), boundary);
    m.documents = *parsed;
    m.document_end_token = field<int64_t>(documents, "end_token", path);
    ROTA_CHECK(m.document_end_token >= 0 && m.document_end_token < m.vocab_size,
               "data: {}: document end token {} is outside the vocabulary [0, {})", path.string(),
               m.document_end_token, m.vocab_size);
  }
  const json splits = j.contains("splits") ? j["splits"] : json();
  ROTA_CHECK(splits.is_object(), "data: {}: missing field 'splits'", path.string());
  for (const auto& [name, s] : splits.items()) {
    SplitInfo split;
    split.name = name;
    split.source = field<std::string>(s, "source", path);
    split.text_bytes = field<int64_t>(s, "text_bytes", path);
    split.tokens = field<int64_t>(s, "tokens", path);
    const json shards = s.contains("shards") ? s["shards"] : json();
    ROTA_CHECK(shards.is_array(), "data: {}: split '{}' has no shard list", path.string(), name);
    int64_t total = 0;
    for (const json& sh : shards) {
      ShardInfo shard;
      shard.file = field<std::string>(sh, "file", path);
      shard.tokens = field<int64_t>(sh, "tokens", path);
      shard.bytes = field<int64_t>(sh, "bytes", path);
      shard.sha256 = field<std::string>(sh, "sha256", path);
      ROTA_CHECK(!shard.file.empty() && shard.file.find('/') == std::string::npos &&
                     shard.file != "." && shard.file != "..",
                 "data: {}: shard file name '{}' must be a plain file name", path.string(),
                 shard.file);
      ROTA_CHECK(shard.tokens >= 0 && shard.bytes == shard.tokens * token_bytes(m.dtype),
                 "data: {}: shard {} says {} tokens but {} bytes (dtype {})", path.string(),
                 shard.file, shard.tokens, shard.bytes, token_width_name(m.dtype));
      total += shard.tokens;
      split.shards.push_back(std::move(shard));
    }
    ROTA_CHECK(total == split.tokens, "data: {}: split '{}' says {} tokens, its shards hold {}",
               path.string(), name, split.tokens, total);
    m.splits.push_back(std::move(split));
  }
  // JSON objects are unordered: keep train, valid, test first, others by name.
  auto rank = [](const std::string& n) {
    return n == "train" ? 0 : n == "valid" ? 1 : n == "test" ? 2 : 3;
  };
  std::stable_sort(m.splits.begin(), m.splits.end(), [&](const SplitInfo& a, const SplitInfo& b) {
    return rank(a.name) != rank(b.name) ? rank(a.name) < rank(b.name) : a.name < b.name;
  });
  return m;
}

}  // namespace rota::data
