// tokenizer.json normalizers: the text transformations applied before pre-tokenization.
#pragma once

#include <memory>
#include <string>

#include "data/tokenizer/huggingface/hf_json.h"

namespace rota::data::hf {

/// Rewrites text (valid UTF-8) in place.
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void apply(std::string& text) const = 0;
};

/// Supported: NFC NFD NFKC NFKD Lowercase Strip StripAccents BertNormalizer Replace Prepend
/// Precompiled Sequence. Throws rota::Error naming the path for anything else.
std::unique_ptr<Normalizer> parse_normalizer(const json& value, const JsonPath& at);

inline constexpr const char* kSupportedNormalizers =
    "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, BertNormalizer, Replace, Prepend, "
    "Precompiled, Sequence";

/// The pattern of Replace (normalizer and decoder), Split: {"String": s} or {"Regex": r}.
class Pattern;
Pattern parse_pattern(const json& value, const JsonPath& at);

}  // namespace rota::data::hf
