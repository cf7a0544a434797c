// HuggingFaceTokenizer: tokenizer.json parsing, special-token roles, line-wise (parallel)
// encoding and decoding.
#include "data/tokenizer/huggingface/huggingface_tokenizer.h"

#include <omp.h>

#include <algorithm>

#include "data/tokenizer/huggingface/hf_added_tokens.h"
#include "data/tokenizer/huggingface/hf_decoder.h"
#include "data/tokenizer/huggingface/hf_model.h"
#include "data/tokenizer/huggingface/hf_normalizer.h"
#include "data/tokenizer/huggingface/hf_pre_tokenizer.h"
#include "data/tokenizer/huggingface/hf_special_roles.h"
#include "data/tokenizer/huggingface/hf_text.h"
#include "data/tokenizer/tokenizer_config.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

using hf::json;
using hf::JsonPath;

// Texts shorter than this are encoded on the calling thread.
constexpr size_t kParallelBytes = 1 << 16;

hf::AddedToken parse_added_token(const json& value, const JsonPath& at) {
  hf::AddedToken token;
  const json& id = hf::member(value, at, "id");
  if (!id.is_number_integer() || id.get<int64_t>() < 0)
    hf::fail_at(at.key("id"), "must be a non-negative integer");
  token.id = id.get<int64_t>();
  token.content = hf::string_member(value, at, "content");
  token.single_word = hf::bool_or(value, at, "single_word", false);
  token.lstrip = hf::bool_or(value, at, "lstrip", false);
  token.rstrip = hf::bool_or(value, at, "rstrip", false);
  token.special = hf::bool_or(value, at, "special", false);
  token.normalized = hf::bool_or(value, at, "normalized", !token.special);
  return token;
}

// Real tokenizer.json files nest a handful of levels (Sequence inside Sequence at most);
// components are read recursively, so a deeper file is refused before it can exhaust the stack.
constexpr int kMaxNesting = 64;

// Whether any value of doc lies deeper than `limit` levels (walked without recursion).
bool nests_deeper_than(const json& doc, int limit) {
  std::vector<std::pair<const json*, int>> pending = {{&doc, 1}};
  while (!pending.empty()) {
    const auto [value, depth] = pending.back();
    pending.pop_back();
    if (!value->is_structured()) continue;
    if (depth > limit) return true;
    for (const json& child : *value) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace

HuggingFaceTokenizer::HuggingFaceTokenizer() = default;
HuggingFaceTokenizer::~HuggingFaceTokenizer() = default;

bool is_huggingface_tokenizer_json(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.contains("model") && !doc.contains("format");
}

std::unique_ptr<HuggingFaceTokenizer> HuggingFaceTokenizer::from_file(
    const std::filesystem::path& path) {
  ROTA_CHECK(std::filesystem::is_regular_file(path), "tokenizer: {} not found", path.string());
  return from_json(read_file(path), path.string());
}

std::unique_ptr<HuggingFaceTokenizer> HuggingFaceTokenizer::from_json(std::string text,
                                                                      const std::string& name) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", name, library_detail(e));
  }
  const JsonPath root{name, ""};
  if (!doc.is_object()) fail("{}: a tokenizer.json must be a JSON object", name);
  if (nests_deeper_than(doc, kMaxNesting)) {
    fail("{}: nests objects and arrays more than {} levels deep; no tokenizer.json does", name,
         kMaxNesting);
  }
  if (!doc.contains("model"))
    fail("{}: has no \"model\" (not a Hugging Face tokenizer.json)", name);
  if (hf::has(doc, "version")) {
    const json& version = doc["version"];
    if (!version.is_string() || version.get<std::string>() != "1.0")
      hf::fail_at(root.key("version"), "is {}, this reader knows \"1.0\"", version.dump());
  }
  // "truncation" and "padding" are ignored: Rota cuts and pads sequences itself.

  std::unique_ptr<HuggingFaceTokenizer> tokenizer(new HuggingFaceTokenizer());
  HuggingFaceTokenizer& t = *tokenizer;
  t.model_ = hf::parse_model(doc["model"], root.key("model"));
  if (hf::has(doc, "normalizer"))
    t.normalizer_ = hf::parse_normalizer(doc["normalizer"], root.key("normalizer"));
  if (hf::has(doc, "pre_tokenizer"))
    t.pre_tokenizer_ = hf::parse_pre_tokenizer(doc["pre_tokenizer"], root.key("pre_tokenizer"));
  if (hf::has(doc, "decoder")) t.decoder_ = hf::parse_decoder(doc["decoder"], root.key("decoder"));

  t.added_ = std::make_unique<hf::AddedTokens>();
  if (hf::has(doc, "added_tokens")) {
    const json& list = hf::array_member(doc, root, "added_tokens");
    for (size_t i = 0; i < list.size(); ++i) {
      t.added_->tokens.push_back(parse_added_token(list[i], root.key("added_tokens").index(i)));
    }
  }
  for (size_t i = 0; i < t.added_->tokens.size(); ++i) {
    const hf::AddedToken& token = t.added_->tokens[i];
    if (token.normalized) {
      std::string pattern = token.content;
      if (t.normalizer_) t.normalizer_->apply(pattern);
      t.added_->normalized.add(std::move(pattern), i);
    } else {
      t.added_->raw.add(token.content, i);
    }
  }
  t.added_->normalized.build();
  t.added_->raw.build();

  // The vocabulary: the model's tokens, then the added tokens (which win for display).
  t.tokens_ = t.model_->tokens();
  t.known_.assign(t.tokens_.size(), false);
  for (size_t id = 0; id < t.tokens_.size(); ++id)
    t.known_[id] = t.model_->find(t.tokens_[id]) == static_cast<int64_t>(id);
  for (const hf::AddedToken& token : t.added_->tokens) {
    if (static_cast<size_t>(token.id) >= t.tokens_.size()) {
      t.tokens_.resize(token.id + 1);
      t.known_.resize(token.id + 1, false);
    }
    t.tokens_[token.id] = token.content;
    t.known_[token.id] = true;
  }
  ROTA_CHECK(!t.tokens_.empty(), "{}: the vocabulary is empty", name);

  t.specials_ = hf::special_roles(doc, root, *t.model_, t.added_->tokens);
  t.json_text_ = std::move(text);
  return tokenizer;
}

std::string HuggingFaceTokenizer::model_type() const {
  return model_->type();
}

void HuggingFaceTokenizer::encode_line(std::string_view line, std::vector<int64_t>& ids) const {
  thread_local std::vector<hf::Span> raw_spans, spans;
  thread_local std::vector<hf::Piece> pieces;
  raw_spans.clear();
  if (added_->raw.empty()) {
    raw_spans.push_back({0, line.size(), -1});
  } else {
    added_->raw.split(line, added_->tokens, raw_spans);
  }
  for (size_t s = 0; s < raw_spans.size(); ++s) {
    const hf::Span raw = raw_spans[s];
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    std::string text(line.substr(raw.begin, raw.end - raw.begin));
    if (normalizer_) normalizer_->apply(text);
    if (text.empty()) continue;
    spans.clear();
    if (added_->normalized.empty()) {
      spans.push_back({0, text.size(), -1});
    } else {
      added_->normalized.split(text, added_->tokens, spans);
    }
    for (const hf::Span& span : spans) {
      if (span.id >= 0) {
        ids.push_back(span.id);
        continue;
      }
      pieces.clear();
      pieces.push_back(
          {text.substr(span.begin, span.end - span.begin), raw.begin == 0 && span.begin == 0});
      if (pre_tokenizer_) pre_tokenizer_->apply(pieces);
      for (const hf::Piece& piece : pieces) {
        if (!piece.text.empty()) model_->encode(piece.text, ids);
      }
    }
  }
}

std::vector<int64_t> HuggingFaceTokenizer::encode(std::string_view input) const {
  const std::string valid = hf::to_valid_utf8(input);
  const std::string_view text = valid;
  const auto encode_lines = [&](std::string_view part, std::vector<int64_t>& ids) {
    for (size_t pos = 0; pos < part.size();) {
      size_t end = part.find('\n', pos);
      end = end == std::string_view::npos ? part.size() : end + 1;
      encode_line(part.substr(pos, end - pos), ids);
      pos = end;
    }
  };
  std::vector<int64_t> ids;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (text.size() < kParallelBytes || threads <= 1) {
    ids.reserve(text.size() / 3);
    encode_lines(text, ids);
    return ids;
  }
  // Line-aligned chunks, several per thread so uneven lines still balance.
  const size_t chunks = static_cast<size_t>(threads) * 8;
  std::vector<size_t> bounds{0};
  for (size_t c = 1; c < chunks; ++c) {
    size_t cut = std::max(bounds.back(), text.size() * c / chunks);
    const size_t newline = text.find('\n', cut);
    cut = newline == std::string_view::npos ? text.size() : newline + 1;
    if (cut > bounds.back() && cut < text.size()) bounds.push_back(cut);
  }
  bounds.push_back(text.size());
  const int64_t count = static_cast<int64_t>(bounds.size()) - 1;
  std::vector<std::vector<int64_t>> parts(count);
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t c = 0; c < count; ++c) {
    try {
      parts[c].reserve((bounds[c + 1] - bounds[c]) / 3);
      encode_lines(text.substr(bounds[c], bounds[c + 1] - bounds[c]), parts[c]);
    } catch (...) {
#pragma omp critical
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  ids.reserve(total);
  for (const auto& part : parts) ids.insert(ids.end(), part.begin(), part.end());
  return ids;
}

std::string HuggingFaceTokenizer::decode(std::span<const int64_t> ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    check_id(id, "huggingface tokenizer decode");
    if (known_[id]) tokens.push_back(tokens_[id]);
  }
  if (!decoder_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) joined.push_back(' ');
      joined += tokens[i];
    }
    return joined;
  }
  std::string text;
  for (const std::string& part : decoder_->decode_chain(std::move(tokens))) text += part;
  return text;
}

std::string HuggingFaceTokenizer::token_text(int64_t id) const {
  check_id(id, "huggingface tokenizer token_text");
  return tokens_[id];
}

void HuggingFaceTokenizer::save(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  write_file_atomically(dir / kTokenizerConfigFile, json_text_);
}

}  // namespace rota::data
