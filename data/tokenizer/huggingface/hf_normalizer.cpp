// The normalizers of tokenizer.json.
#include "data/tokenizer/huggingface/hf_normalizer.h"

#include <vector>

#include "data/tokenizer/huggingface/hf_precompiled.h"
#include "data/tokenizer/huggingface/hf_regex.h"
#include "data/tokenizer/huggingface/hf_text.h"

namespace rota::data::hf {

namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void apply(std::string& text) const override { text = normalize(text, form_); }

 private:
  NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  void apply(std::string& text) const override { text = lowercase(text); }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void apply(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t pos = begin;
        if (!is_whitespace(next_code_point(text, pos))) break;
        begin = pos;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t pos = start;
        if (!is_whitespace(next_code_point(text, pos))) break;
        end = start;
      }
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

std::string remove_marks(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t c = next_code_point(text, pos);
    if (!is_mark(c)) out.append(text.substr(start, pos - start));
  }
  return out;
}

class StripAccentsNormalizer final : public Normalizer {
 public:
  void apply(std::string& text) const override { text = remove_marks(text); }
};

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(chinese),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  void apply(std::string& text) const override {
    if (clean_text_ || chinese_) {
      std::string out;
      out.reserve(text.size());
      for (size_t pos = 0; pos < text.size();) {
        const size_t start = pos;
        const char32_t c = next_code_point(text, pos);
        if (clean_text_) {
          if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
          if (is_bert_whitespace(c)) {
            out.push_back(' ');
            continue;
          }
        }
        if (chinese_ && is_chinese_char(c)) {
          out.push_back(' ');
          out.append(text.substr(start, pos - start));
          out.push_back(' ');
          continue;
        }
        out.append(text.substr(start, pos - start));
      }
      text = std::move(out);
    }
    if (strip_accents_) text = remove_marks(normalize(text, NormalForm::kNfd));
    if (lowercase_) text = lowercase(text);
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void apply(std::string& text) const override {
    std::vector<std::pair<size_t, size_t>> matches;
    pattern_.find_all(text, matches);
    if (matches.empty()) return;
    std::string out;
    size_t last = 0;
    for (const auto& [begin, end] : matches) {
      out.append(text, last, begin - last);
      out += content_;
      last = end;
    }
    out.append(text, last, std::string::npos);
    text = std::move(out);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void apply(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(PrecompiledCharsmap map) : map_(std::move(map)) {}
  void apply(std::string& text) const override { text = map_.normalize(text); }

 private:
  PrecompiledCharsmap map_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void apply(std::string& text) const override {
    for (const auto& part : parts_) part->apply(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

Pattern parse_pattern(const json& value, const JsonPath& at) {
  if (!value.is_object() || value.size() != 1)
    fail_at(at, "must be {{\"String\": ...}} or {{\"Regex\": ...}}");
  if (has(value, "String")) return Pattern::literal(string_member(value, at, "String"));
  if (has(value, "Regex"))
    return Pattern::regex(string_member(value, at, "Regex"), at.key("Regex"));
  fail_at(at, "must be {{\"String\": ...}} or {{\"Regex\": ...}}, found key '{}'",
          value.begin().key());
}

std::unique_ptr<Normalizer> parse_normalizer(const json& value, const JsonPath& at) {
  const std::string type = component_type(value, at);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(bool_or(value, at, "strip_left", true),
                                             bool_or(value, at, "strip_right", true));
  }
  if (type == "BertNormalizer") {
    const bool lower = bool_or(value, at, "lowercase", true);
    return std::make_unique<BertNormalizer>(bool_or(value, at, "clean_text", true),
                                            bool_or(value, at, "handle_chinese_chars", true),
                                            bool_or(value, at, "strip_accents", lower), lower);
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(
        parse_pattern(member(value, at, "pattern"), at.key("pattern")),
        string_member(value, at, "content"));
  }
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(string_member(value, at, "prepend"));
  if (type == "Precompiled") {
    const std::string where = at.key("precompiled_charsmap").where();
    const std::string encoded = string_or(value, at, "precompiled_charsmap", "");
    return std::make_unique<PrecompiledNormalizer>(
        PrecompiledCharsmap(base64_decode(encoded, where), where));
  }
  if (type == "Sequence") {
    const json& list = array_member(value, at, "normalizers");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      parts.push_back(parse_normalizer(list[i], at.key("normalizers").index(i)));
    }
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  unsupported_type(at, "a normalizer", type, kSupportedNormalizers);
}

}  // namespace rota::data::hf
