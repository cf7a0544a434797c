// Masked-LM corruption (BERT): select 15 % of the ordinary tokens; 80 % <mask>, 10 % random, 10 %
// kept.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "framework/tensor/random.h"

namespace rota::data {

struct MlmOptions {
  /// Probability that an ordinary token is selected for prediction.
  double select_rate = 0.15;
  /// Of the selected tokens: probability of becoming <mask>, and of becoming a random
  /// ordinary token; the rest keep their id.
  double mask_rate = 0.8;
  double random_rate = 0.1;
};

/// Applies MLM corruption to token ids. Special tokens (every id in the tokenizer's
/// SpecialTokens: <pad>, <unk>, <eos>, <cls>, ...) are never selected. Each ordinary position
/// is selected independently with probability select_rate (so the count is binomial, as in
/// HuggingFace's collator, rather than exactly 15 %). Random replacements are drawn
/// uniformly from the ordinary ids (never a special token; may equal the original).
class MlmMasker {
 public:
  /// Needs a tokenizer with <mask>.
  MlmMasker(const Tokenizer& tokenizer, MlmOptions options = {});

  /// Corrupts tokens in place and writes targets: the original id at selected positions,
  /// kIgnoreIndex elsewhere. Draws from gen in position order. Returns the number selected.
  int64_t apply(std::span<int64_t> tokens, std::span<int64_t> targets, Generator& gen) const;

  int64_t mask_id() const { return mask_id_; }
  bool is_special(int64_t id) const { return id >= 0 && id < vocab_size_ && special_[id]; }
  const MlmOptions& options() const { return options_; }

 private:
  MlmOptions options_;
  int64_t mask_id_;
  int64_t vocab_size_;
  std::vector<bool> special_;          // id -> is a special token
  std::vector<int64_t> ordinary_ids_;  // candidates for random replacement
};

}  // namespace rota::data
