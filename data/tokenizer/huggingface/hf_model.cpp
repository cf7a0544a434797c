// Model dispatch, vocabulary registration and the per-thread piece cache.
#include "data/tokenizer/huggingface/hf_model.h"

#include <atomic>
#include <unordered_map>

namespace rota::data::hf {

namespace {

constexpr size_t kCacheEntries = 200000;  // per model and thread
constexpr size_t kCachedModels = 8;       // per thread

}  // namespace

uint64_t Model::next_cache_key() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

void Model::add_token(const std::string& token, int64_t id, const JsonPath& at) {
  if (id < 0 || id > (int64_t{1} << 31))
    fail_at(at, "token '{}' has id {} (out of range)", token, id);
  if (static_cast<size_t>(id) >= tokens_.size()) tokens_.resize(id + 1);
  if (!tokens_[id].empty())
    fail_at(at, "id {} is given to both '{}' and '{}'", id, tokens_[id], token);
  if (!ids_.emplace(token, id).second) fail_at(at, "token '{}' appears twice", token);
  tokens_[id] = token;
}

StringMap<std::vector<int32_t>>& Model::cache() const {
  thread_local std::unordered_map<uint64_t, StringMap<std::vector<int32_t>>> caches;
  auto it = caches.find(cache_key_);
  if (it == caches.end()) {
    if (caches.size() >= kCachedModels) caches.clear();
    it = caches.emplace(cache_key_, StringMap<std::vector<int32_t>>()).first;
  }
  if (it->second.size() >= kCacheEntries) it->second.clear();
  return it->second;
}

void read_vocab_object(const json& vocab, const JsonPath& at,
                       const std::function<void(const std::string&, int64_t)>& add) {
  if (!vocab.is_object())
    fail_at(at, "must be an object of token: id, found {}", vocab.type_name());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer()) fail_at(at, "id of token '{}' must be an integer", token);
    add(token, id.get<int64_t>());
  }
}

std::unique_ptr<Model> parse_model(const json& value, const JsonPath& at) {
  // Files written before models carried "type" are told apart by their fields.
  std::string type;
  if (has(value, "type")) {
    type = component_type(value, at);
  } else if (has(value, "merges")) {
    type = "BPE";
  } else if (has(value, "continuing_subword_prefix") || has(value, "max_input_chars_per_word")) {
    type = "WordPiece";
  } else if (has(value, "vocab") && member(value, at, "vocab").is_array()) {
    type = "Unigram";
  } else {
    type = "WordLevel";
  }
  if (type == "BPE") return parse_bpe(value, at);
  if (type == "WordPiece") return parse_word_piece(value, at);
  if (type == "WordLevel") return parse_word_level(value, at);
  if (type == "Unigram") return parse_unigram(value, at);
  unsupported_type(at, "a model", type, kSupportedModels);
}

}  // namespace rota::data::hf
