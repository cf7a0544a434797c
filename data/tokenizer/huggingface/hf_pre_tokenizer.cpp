// The pre-tokenizers of tokenizer.json.
#include "data/tokenizer/huggingface/hf_pre_tokenizer.h"

#include <functional>

#include "data/tokenizer/huggingface/hf_normalizer.h"
#include "data/tokenizer/huggingface/hf_regex.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior parse_behavior(const json& value, const JsonPath& at, std::string_view name,
                        std::string_view fallback) {
  const std::string text = string_or(value, at, name, fallback);
  if (text == "Removed") return Behavior::kRemoved;
  if (text == "Isolated") return Behavior::kIsolated;
  if (text == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (text == "MergedWithNext") return Behavior::kMergedWithNext;
  if (text == "Contiguous") return Behavior::kContiguous;
  fail_at(at.key(name),
          "'{}' is not a split behavior (Removed, Isolated, MergedWithPrevious, MergedWithNext, "
          "Contiguous)",
          text);
}

struct Segment {
  size_t begin, end;
  bool is_match;
};

// Hugging Face's NormalizedString::split: segments cover the piece; the behaviour decides
// which become pieces.
void split_piece(const Piece& piece, const std::vector<Segment>& segments, Behavior behavior,
                 std::vector<Piece>& out) {
  std::vector<std::pair<size_t, size_t>> ranges;
  ranges.reserve(segments.size());
  switch (behavior) {
    case Behavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) ranges.emplace_back(s.begin, s.end);
      }
      break;
    case Behavior::kIsolated:
      for (const Segment& s : segments) ranges.emplace_back(s.begin, s.end);
      break;
    case Behavior::kContiguous: {
      bool previous = false;
      for (const Segment& s : segments) {
        if (s.is_match == previous && !ranges.empty()) {
          ranges.back().second = s.end;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        previous = s.is_match;
      }
      break;
    }
    case Behavior::kMergedWithPrevious: {
      bool previous = false;
      for (const Segment& s : segments) {
        if (s.is_match && !previous && !ranges.empty()) {
          ranges.back().second = s.end;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        previous = s.is_match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      bool previous = false;
      for (size_t k = segments.size(); k-- > 0;) {
        const Segment& s = segments[k];
        if (s.is_match && !previous && !ranges.empty()) {
          ranges.back().first = s.begin;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        previous = s.is_match;
      }
      std::reverse(ranges.begin(), ranges.end());
      break;
    }
  }
  for (const auto& [begin, end] : ranges) {
    if (end > begin)
      out.push_back({piece.text.substr(begin, end - begin), piece.at_start && begin == 0});
  }
}

// Segments from a pattern's matches (flipped when invert).
void pattern_segments(const Pattern& pattern, std::string_view text, bool invert,
                      std::vector<Segment>& segments) {
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  matches.clear();
  segments.clear();
  pattern.find_all(text, matches);
  size_t last = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > last) segments.push_back({last, begin, invert});
    segments.push_back({begin, end, !invert});
    last = end;
  }
  if (last < text.size() || text.empty()) segments.push_back({last, text.size(), invert});
}

// Segments from a character predicate: every matching character is a match of its own.
template <typename Predicate>
void char_segments(std::string_view text, Predicate&& predicate, std::vector<Segment>& segments) {
  segments.clear();
  size_t last = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t c = next_code_point(text, pos);
    if (predicate(c)) {
      if (start > last) segments.push_back({last, start, false});
      segments.push_back({start, pos, true});
      last = pos;
    }
  }
  if (last < text.size()) segments.push_back({last, text.size(), false});
}

template <typename Segmenter>
void split_all(std::vector<Piece>& pieces, Behavior behavior, Segmenter&& segmenter) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  thread_local std::vector<Segment> segments;
  for (const Piece& piece : pieces) {
    segmenter(piece.text, segments);
    split_piece(piece, segments, behavior, out);
  }
  pieces = std::move(out);
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {
    if (use_regex_)
      regex_ = std::make_unique<Pattern>(Pattern::regex(kGpt2Pattern, {"", "ByteLevel"}));
  }
  void apply(std::vector<Piece>& pieces) const override {
    if (add_prefix_space_) {
      for (Piece& piece : pieces) {
        if (piece.text.empty() || piece.text[0] != ' ') piece.text.insert(0, 1, ' ');
      }
    }
    if (use_regex_) {
      split_all(pieces, Behavior::kIsolated, [&](std::string_view text, auto& segments) {
        pattern_segments(*regex_, text, false, segments);
      });
    }
    const auto& table = byte_level_chars();
    for (Piece& piece : pieces) {
      std::string mapped;
      mapped.reserve(piece.text.size() * 2);
      for (char c : piece.text) mapped += table[static_cast<unsigned char>(c)];
      piece.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<Pattern> regex_;
};

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void apply(std::vector<Piece>& pieces) const override {
    split_all(pieces, behavior_, [&](std::string_view text, auto& segments) {
      pattern_segments(pattern_, text, invert_, segments);
    });
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

// Whitespace: the matches of \w+|[^\w\s]+ are the pieces.
class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  void apply(std::vector<Piece>& pieces) const override {
    split_all(pieces, Behavior::kRemoved, [](std::string_view text, auto& segments) {
      segments.clear();
      size_t pos = 0, last = 0;
      while (pos < text.size()) {
        size_t next = pos;
        const char32_t c = next_code_point(text, next);
        if (is_whitespace(c) && !is_word_char(c)) {
          pos = next;
          continue;
        }
        const bool word = is_word_char(c);
        size_t end = next;
        while (end < text.size()) {
          size_t after = end;
          const char32_t d = next_code_point(text, after);
          if (word ? !is_word_char(d) : (is_word_char(d) || is_whitespace(d))) break;
          end = after;
        }
        if (pos > last) segments.push_back({last, pos, true});
        segments.push_back({pos, end, false});
        last = pos = end;
      }
      if (last < text.size()) segments.push_back({last, text.size(), true});
    });
  }
};

class PredicatePreTokenizer final : public PreTokenizer {
 public:
  PredicatePreTokenizer(std::function<bool(char32_t)> predicate, Behavior behavior)
      : predicate_(std::move(predicate)), behavior_(behavior) {}
  void apply(std::vector<Piece>& pieces) const override {
    split_all(pieces, behavior_, [&](std::string_view text, auto& segments) {
      char_segments(text, predicate_, segments);
    });
  }

 private:
  std::function<bool(char32_t)> predicate_;
  Behavior behavior_;
};

class BertPreTokenizer final : public PreTokenizer {
 public:
  void apply(std::vector<Piece>& pieces) const override {
    split_all(pieces, Behavior::kRemoved, [](std::string_view text, auto& segments) {
      char_segments(text, is_whitespace, segments);
    });
    split_all(pieces, Behavior::kIsolated, [](std::string_view text, auto& segments) {
      char_segments(text, is_punctuation, segments);
    });
  }
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)),
        scheme_(scheme),
        split_(split),
        literal_(Pattern::literal(replacement_)) {}
  void apply(std::vector<Piece>& pieces) const override {
    for (Piece& piece : pieces) {
      std::string out;
      out.reserve(piece.text.size() + replacement_.size());
      for (char c : piece.text) {
        if (c == ' ') {
          out += replacement_;
        } else {
          out.push_back(c);
        }
      }
      const bool prepend =
          scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && piece.at_start);
      if (prepend && out.compare(0, replacement_.size(), replacement_) != 0) {
        out.insert(0, replacement_);
      }
      piece.text = std::move(out);
    }
    if (split_) {
      split_all(pieces, Behavior::kMergedWithNext, [&](std::string_view text, auto& segments) {
        pattern_segments(literal_, text, false, segments);
      });
    }
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Pattern literal_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void apply(std::vector<Piece>& pieces) const override {
    for (const auto& part : parts_) part->apply(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      append_utf8(t[b], static_cast<char32_t>(printable ? b : 256 + next++));
    }
    return t;
  }();
  return table;
}

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& value, const JsonPath& at) {
  const std::string type = component_type(value, at);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(bool_or(value, at, "add_prefix_space", true),
                                                   bool_or(value, at, "use_regex", true));
  }
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(
        parse_pattern(member(value, at, "pattern"), at.key("pattern")),
        parse_behavior(value, at, "behavior", "Removed"), bool_or(value, at, "invert", false));
  }
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") {
    return std::make_unique<PredicatePreTokenizer>(is_whitespace, Behavior::kRemoved);
  }
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Punctuation") {
    return std::make_unique<PredicatePreTokenizer>(
        is_punctuation, parse_behavior(value, at, "behavior", "Isolated"));
  }
  if (type == "Digits") {
    return std::make_unique<PredicatePreTokenizer>(
        is_numeric, bool_or(value, at, "individual_digits", false) ? Behavior::kIsolated
                                                                   : Behavior::kContiguous);
  }
  if (type == "Metaspace") {
    std::string replacement = string_or(value, at, "replacement", "\xE2\x96\x81");
    size_t length = 0;
    if (!replacement.empty()) length = utf8_length(static_cast<unsigned char>(replacement[0]));
    if (replacement.empty() || length != replacement.size())
      fail_at(at.key("replacement"), "must be one character, found '{}'", replacement);
    PrependScheme scheme = PrependScheme::kAlways;
    if (has(value, "prepend_scheme")) {
      const std::string text = string_member(value, at, "prepend_scheme");
      if (text == "always") {
        scheme = PrependScheme::kAlways;
      } else if (text == "first") {
        scheme = PrependScheme::kFirst;
      } else if (text == "never") {
        scheme = PrependScheme::kNever;
      } else {
        fail_at(at.key("prepend_scheme"), "'{}' is not one of always, first, never", text);
      }
    } else if (!bool_or(value, at, "add_prefix_space", true)) {
      scheme = PrependScheme::kNever;
    }
    return std::make_unique<MetaspacePreTokenizer>(std::move(replacement), scheme,
                                                   bool_or(value, at, "split", true));
  }
  if (type == "Sequence") {
    const json& list = array_member(value, at, "pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      parts.push_back(parse_pre_tokenizer(list[i], at.key("pretokenizers").index(i)));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  unsupported_type(at, "a pre-tokenizer", type, kSupportedPreTokenizers);
}

}  // namespace rota::data::hf
