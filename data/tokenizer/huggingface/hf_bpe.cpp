// The BPE model of tokenizer.json: characters (with byte fallback or <unk>), then merges by
// rank, leftmost first.
#include <array>
#include <climits>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "data/tokenizer/huggingface/hf_model.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

class Bpe final : public Model {
 public:
  Bpe(const json& value, const JsonPath& at) {
    if (has(value, "dropout")) {
      fail_at(at.key("dropout"), "is {}: BPE dropout is not supported (it must be null)",
              member(value, at, "dropout").dump());
    }
    read_vocab_object(
        member(value, at, "vocab"), at.key("vocab"),
        [&](const std::string& token, int64_t id) { add_token(token, id, at.key("vocab")); });
    if (has(value, "unk_token")) unk_token_ = string_member(value, at, "unk_token");
    prefix_ = string_or(value, at, "continuing_subword_prefix", "");
    suffix_ = string_or(value, at, "end_of_word_suffix", "");
    fuse_unk_ = bool_or(value, at, "fuse_unk", false);
    byte_fallback_ = bool_or(value, at, "byte_fallback", false);
    ignore_merges_ = bool_or(value, at, "ignore_merges", false);
    if (unk_token_) {
      unk_id_ = find(*unk_token_);
      if (unk_id_ < 0) fail_at(at.key("unk_token"), "'{}' is not in the vocabulary", *unk_token_);
    }
    if (byte_fallback_) {
      for (int b = 0; b < 256; ++b) byte_ids_[b] = find(fmt::format("<0x{:02X}>", b));
    }
    const json& merges = array_member(value, at, "merges");
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const JsonPath where = at.key("merges").index(rank);
      std::string left, right;
      const json& merge = merges[rank];
      if (merge.is_string()) {
        const std::string text = merge.get<std::string>();
        const size_t space = text.find(' ', 1);
        if (space == std::string::npos)
          fail_at(where, "'{}' is not two tokens separated by a space", text);
        left = text.substr(0, space);
        right = text.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                 merge[1].is_string()) {
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        fail_at(where, "must be \"a b\" or [\"a\", \"b\"]");
      }
      const int64_t a = find(left), b = find(right);
      if (a < 0) fail_at(where, "token '{}' is not in the vocabulary", left);
      if (b < 0) fail_at(where, "token '{}' is not in the vocabulary", right);
      std::string joined = left;
      if (!prefix_.empty() && right.compare(0, prefix_.size(), prefix_) == 0) {
        joined += right.substr(prefix_.size());
      } else {
        joined += right;
      }
      const int64_t merged = find(joined);
      if (merged < 0) fail_at(where, "merged token '{}' is not in the vocabulary", joined);
      merges_[pair_key(a, b)] = Merge{static_cast<int32_t>(rank), static_cast<int32_t>(merged)};
    }
  }

  std::string type() const override { return "BPE"; }

  void encode(std::string_view piece, std::vector<int64_t>& ids) const override {
    if (ignore_merges_) {
      const int64_t id = find(piece);
      if (id >= 0) {
        ids.push_back(id);
        return;
      }
    }
    auto& cached = cache();
    if (const auto it = cached.find(piece); it != cached.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
    std::vector<int32_t> word = merge_word(piece);
    ids.insert(ids.end(), word.begin(), word.end());
    if (piece.size() <= kCachedPieceBytes) cached.emplace(std::string(piece), std::move(word));
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  static uint64_t pair_key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
  }

  std::vector<int32_t> merge_word(std::string_view word) const {
    std::vector<int32_t> symbols;
    symbols.reserve(word.size());
    int64_t pending_unk = -1;  // an <unk> not yet added (fuse_unk joins neighbours)
    std::string unit;
    for (size_t pos = 0; pos < word.size();) {
      const size_t start = pos;
      pos += utf8_length(static_cast<unsigned char>(word[pos]));
      unit.clear();
      if (start > 0) unit += prefix_;
      unit.append(word.substr(start, pos - start));
      if (pos == word.size()) unit += suffix_;
      const int64_t id = find(unit);
      if (id >= 0) {
        if (pending_unk >= 0) {
          symbols.push_back(static_cast<int32_t>(pending_unk));
          pending_unk = -1;
        }
        symbols.push_back(static_cast<int32_t>(id));
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (char c : unit) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
        if (all) {
          for (char c : unit)
            symbols.push_back(static_cast<int32_t>(byte_ids_[static_cast<unsigned char>(c)]));
          continue;
        }
      }
      if (unk_id_ >= 0) {
        if (pending_unk >= 0 && !fuse_unk_) symbols.push_back(static_cast<int32_t>(pending_unk));
        pending_unk = unk_id_;
      }
    }
    if (pending_unk >= 0) symbols.push_back(static_cast<int32_t>(pending_unk));
    if (symbols.size() <= kShortWord) {
      merge_short(symbols);
    } else {
      merge_long(symbols);
    }
    return symbols;
  }

  // Short words: merge the lowest-ranked adjacent pair, leftmost first, until none applies.
  void merge_short(std::vector<int32_t>& symbols) const {
    while (symbols.size() > 1) {
      int32_t best_rank = INT32_MAX, best_id = -1;
      size_t best_pos = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const auto it = merges_.find(pair_key(symbols[i], symbols[i + 1]));
        if (it != merges_.end() && it->second.rank < best_rank) {
          best_rank = it->second.rank;
          best_id = it->second.id;
          best_pos = i;
        }
      }
      if (best_id < 0) break;
      symbols[best_pos] = best_id;
      symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_pos) + 1);
    }
  }

  // Long words (a whole line when there is no pre-tokenizer): the same order with a heap of
  // candidate pairs (rank, then position) over a linked list, stale entries skipped.
  void merge_long(std::vector<int32_t>& symbols) const {
    const int32_t n = static_cast<int32_t>(symbols.size());
    std::vector<int32_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (int32_t i = 0; i < n; ++i) {
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
    }
    struct Candidate {
      int32_t rank, pos, id;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto consider = [&](int32_t left) {
      if (left < 0 || next[left] < 0) return;
      const auto it = merges_.find(pair_key(symbols[left], symbols[next[left]]));
      if (it != merges_.end()) queue.push({it->second.rank, left, it->second.id});
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i);
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      if (!alive[top.pos] || next[top.pos] < 0) continue;
      const int32_t right = next[top.pos];
      const auto it = merges_.find(pair_key(symbols[top.pos], symbols[right]));
      if (it == merges_.end() || it->second.id != top.id || it->second.rank != top.rank) continue;
      symbols[top.pos] = top.id;
      alive[right] = false;
      next[top.pos] = next[right];
      if (next[right] >= 0) prev[next[right]] = top.pos;
      consider(prev[top.pos]);
      consider(top.pos);
    }
    std::vector<int32_t> merged;
    merged.reserve(n);
    for (int32_t i = 0; i >= 0 && i < n; i = next[i]) merged.push_back(symbols[i]);
    symbols = std::move(merged);
  }

  static constexpr size_t kShortWord = 24;

  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  int64_t unk_id_ = -1;
  std::array<int64_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace

std::unique_ptr<Model> parse_bpe(const json& value, const JsonPath& at) {
  return std::make_unique<Bpe>(value, at);
}

}  // namespace rota::data::hf
