// The Unigram model of tokenizer.json: Viterbi over the vocabulary's log-probabilities, unknown
// characters fused into one <unk> (or their bytes with byte_fallback).
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "data/tokenizer/huggingface/hf_model.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

constexpr double kUnkPenalty = 10.0;

class Unigram final : public Model {
 public:
  Unigram(const json& value, const JsonPath& at) {
    const json& vocab = array_member(value, at, "vocab");
    scores_.reserve(vocab.size());
    double min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < vocab.size(); ++i) {
      const JsonPath where = at.key("vocab").index(i);
      const json& entry = vocab[i];
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
        fail_at(where, "must be [\"piece\", score]");
      const std::string piece = entry[0].get<std::string>();
      add_token(piece, static_cast<int64_t>(i), where);
      const double score = entry[1].get<double>();
      scores_.push_back(score);
      min_score = std::min(min_score, score);
      max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
    }
    unk_score_ = (vocab.empty() ? 0.0 : min_score) - kUnkPenalty;
    if (has(value, "unk_id")) {
      unk_id_ = int_or(value, at, "unk_id", -1);
      if (unk_id_ < 0 || unk_id_ >= static_cast<int64_t>(vocab.size()))
        fail_at(at.key("unk_id"), "{} is outside the vocabulary [0, {})", unk_id_, vocab.size());
      unk_token_ = tokens_[unk_id_];
    }
    byte_fallback_ = bool_or(value, at, "byte_fallback", false);
    for (int b = 0; b < 256; ++b) byte_ids_[b] = find(fmt::format("<0x{:02X}>", b));
  }

  std::string type() const override { return "Unigram"; }

  void encode(std::string_view piece, std::vector<int64_t>& ids) const override {
    auto& cached = cache();
    if (const auto it = cached.find(piece); it != cached.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
    std::vector<int32_t> result;
    for (const std::string_view token : viterbi(piece)) to_ids(token, result);
    ids.insert(ids.end(), result.begin(), result.end());
    if (piece.size() <= kCachedPieceBytes) cached.emplace(std::string(piece), std::move(result));
  }

 private:
  struct Node {
    int64_t id = 0;
    double score = 0;
    int64_t starts_at = -1;
  };

  // The best segmentation's strings; runs of unknown characters are one string.
  std::vector<std::string_view> viterbi(std::string_view text) const {
    const size_t size = text.size();
    std::vector<Node> best(size + 1);
    for (size_t start = 0; start < size;) {
      const double till_here = best[start].score;
      const size_t char_len = utf8_length(static_cast<unsigned char>(text[start]));
      bool has_single = false;
      for (size_t end = start + char_len; end <= size && end - start <= max_piece_bytes_;) {
        const int64_t id = find(text.substr(start, end - start));
        if (id >= 0) {
          const double candidate = scores_[id] + till_here;
          Node& target = best[end];
          if (target.starts_at < 0 || candidate > target.score)
            target = {id, candidate, static_cast<int64_t>(start)};
          if (end - start == char_len) has_single = true;
        }
        if (end == size) break;
        end += utf8_length(static_cast<unsigned char>(text[end]));
      }
      if (!has_single) {
        if (unk_id_ < 0)
          fail(
              "tokenizer.json: Unigram model has no unk_id and '{}' contains a character outside "
              "its vocabulary",
              std::string(text));
        const double candidate = unk_score_ + till_here;
        Node& target = best[start + char_len];
        if (target.starts_at < 0 || candidate > target.score)
          target = {unk_id_, candidate, static_cast<int64_t>(start)};
      }
      start += char_len;
    }
    std::vector<std::string_view> tokens;
    size_t unk_end = 0, unk_start = 0;
    bool in_unk = false;
    for (size_t end = size; end > 0;) {
      const Node& node = best[end];
      const size_t start = static_cast<size_t>(node.starts_at);
      if (node.id == unk_id_) {
        if (!in_unk) unk_end = end;
        in_unk = true;
        unk_start = start;
      } else {
        if (in_unk) tokens.push_back(text.substr(unk_start, unk_end - unk_start));
        in_unk = false;
        tokens.push_back(text.substr(start, end - start));
      }
      end = start;
    }
    if (in_unk) tokens.push_back(text.substr(unk_start, unk_end - unk_start));
    std::reverse(tokens.begin(), tokens.end());
    return tokens;
  }

  void to_ids(std::string_view token, std::vector<int32_t>& out) const {
    const int64_t id = find(token);
    if (id >= 0) {
      out.push_back(static_cast<int32_t>(id));
      return;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : token) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : token)
          out.push_back(static_cast<int32_t>(byte_ids_[static_cast<unsigned char>(c)]));
        return;
      }
    }
    out.push_back(static_cast<int32_t>(unk_id_));
  }

  std::vector<double> scores_;
  size_t max_piece_bytes_ = 0;
  double unk_score_ = 0;
  int64_t unk_id_ = -1;
  bool byte_fallback_ = false;
  std::array<int64_t, 256> byte_ids_{};
};

}  // namespace

std::unique_ptr<Model> parse_unigram(const json& value, const JsonPath& at) {
  return std::make_unique<Unigram>(value, at);
}

}  // namespace rota::data::hf
