// The decoders of tokenizer.json.
#include "data/tokenizer/huggingface/hf_decoder.h"

#include <unordered_map>

#include "data/tokenizer/huggingface/hf_normalizer.h"
#include "data/tokenizer/huggingface/hf_pre_tokenizer.h"
#include "data/tokenizer/huggingface/hf_regex.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t last = 0;
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, last)) {
    out.append(text, last, pos - last);
    out += to;
    last = pos + from.size();
  }
  if (last == 0) return;
  out.append(text, last, std::string::npos);
  text = std::move(out);
}

class ByteLevelDecoder final : public Decoder {
 public:
  ByteLevelDecoder() {
    const auto& table = byte_level_chars();
    for (int b = 0; b < 256; ++b) {
      size_t pos = 0;
      bytes_[next_code_point(table[b], pos)] = static_cast<char>(b);
    }
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string mapped;
      bool all = true;
      for (size_t pos = 0; pos < token.size();) {
        const auto it = bytes_.find(next_code_point(token, pos));
        if (it == bytes_.end()) {
          all = false;
          break;
        }
        mapped.push_back(it->second);
      }
      bytes += all ? mapped : token;
    }
    return {utf8_lossy(bytes)};
  }

 private:
  std::unordered_map<char32_t, char> bytes_;
};

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      if (i > 0) {
        if (token.compare(0, prefix_.size(), prefix_) == 0) {
          token.erase(0, prefix_.size());
        } else {
          token.insert(0, 1, ' ');
        }
      }
      if (cleanup_) {
        replace_all(token, " .", ".");
        replace_all(token, " ?", "?");
        replace_all(token, " !", "!");
        replace_all(token, " ,", ",");
        replace_all(token, " ' ", "'");
        replace_all(token, " n't", "n't");
        replace_all(token, " 'm", "'m");
        replace_all(token, " do not", " don't");
        replace_all(token, " 's", "'s");
        replace_all(token, " 've", "'ve");
        replace_all(token, " 're", "'re");
      }
    }
    return tokens;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      replace_all(token, replacement_, " ");
      if (i == 0 && strip_first_ && !token.empty() && token[0] == ' ') token.erase(0, 1);
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }
    return tokens;
  }

 private:
  std::string suffix_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::pair<size_t, size_t>> matches;
    for (std::string& token : tokens) {
      matches.clear();
      pattern_.find_all(token, matches);
      if (matches.empty()) continue;
      std::string out;
      size_t last = 0;
      for (const auto& [begin, end] : matches) {
        out.append(token, last, begin - last);
        out += content_;
        last = end;
      }
      out.append(token, last, std::string::npos);
      token = std::move(out);
    }
    return tokens;
  }

 private:
  Pattern pattern_;
  std::string content_;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;  // consecutive <0xNN> bytes
    size_t pending_count = 0;
    const auto flush = [&] {
      if (pending_count == 0) return;
      if (to_valid_utf8(pending) == pending) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending_count; ++i) out.push_back("\xEF\xBF\xBD");
      }
      pending.clear();
      pending_count = 0;
    };
    for (std::string& token : tokens) {
      if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' &&
          hex_value(token[3]) >= 0 && hex_value(token[4]) >= 0) {
        pending.push_back(static_cast<char>(hex_value(token[3]) * 16 + hex_value(token[4])));
        ++pending_count;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    return out;
  }
};

class FuseDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    return {joined};
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, int64_t start, int64_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) {
      size_t begin = 0, end = token.size();
      for (int64_t i = 0; i < start_ && token.compare(begin, content_.size(), content_) == 0 &&
                          begin + content_.size() <= end;
           ++i) {
        begin += content_.size();
      }
      for (int64_t i = 0; i < stop_ && end >= begin + content_.size() &&
                          token.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i) {
        end -= content_.size();
      }
      token = token.substr(begin, end - begin);
    }
    return tokens;
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
      : parts_(std::move(parts)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& part : parts_) tokens = part->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const json& value, const JsonPath& at) {
  const std::string type = component_type(value, at);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(string_or(value, at, "prefix", "##"),
                                              bool_or(value, at, "cleanup", true));
  }
  if (type == "Metaspace") {
    bool strip_first = true;
    if (has(value, "prepend_scheme")) {
      strip_first = string_member(value, at, "prepend_scheme") != "never";
    } else {
      strip_first = bool_or(value, at, "add_prefix_space", true);
    }
    return std::make_unique<MetaspaceDecoder>(string_or(value, at, "replacement", "\xE2\x96\x81"),
                                              strip_first);
  }
  if (type == "BPEDecoder")
    return std::make_unique<BpeDecoder>(string_or(value, at, "suffix", "</w>"));
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(
        parse_pattern(member(value, at, "pattern"), at.key("pattern")),
        string_member(value, at, "content"));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(string_member(value, at, "content"),
                                          int_or(value, at, "start", 0),
                                          int_or(value, at, "stop", 0));
  }
  if (type == "Sequence") {
    const json& list = array_member(value, at, "decoders");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      parts.push_back(parse_decoder(list[i], at.key("decoders").index(i)));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  unsupported_type(at, "a decoder", type, kSupportedDecoders);
}

}  // namespace rota::data::hf
