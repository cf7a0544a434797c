// Scoring lines of text with a language model: per-token log-probabilities for `rota predict`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "models/language_models.h"

namespace rota::app {

/// The score of one line: its token ids and, for each token that is scored, its log-probability
/// (natural log) under the model.
struct LineScore {
  std::vector<int64_t> ids;            // tokenizer.encode(line)
  std::vector<double> token_logprobs;  // [ids.size()]; 0 where not scored
  std::vector<uint8_t> scored_mask;    // [ids.size()]; 1 where scored
  int64_t scored = 0;                  // number of scored tokens
  double logprob_sum = 0;              // Σ of the scored log-probabilities
};

/// Causal LM: log p(ids[t] | ids[<t]). The first token is predicted from the tokenizer's <bos>
/// (else <eos>: a line follows the previous line's end in a training stream); a tokenizer with
/// neither leaves it unscored. A line longer than `context` tokens is scored in consecutive
/// non-overlapping windows of `context` inputs, each window seeing only itself, exactly as
/// `rota eval` scores a split. Rows of up to `batch_rows` windows share a forward pass.
std::vector<LineScore> causal_line_scores(const models::CausalLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::string>& lines, int64_t context,
                                          int64_t batch_rows);

/// Masked LM pseudo-log-likelihood: every ordinary (non-special) token t is replaced by <mask>
/// in turn and scored as log p(ids[t] | the rest). Lines longer than `context` are cut into
/// non-overlapping windows of `context` tokens, scored separately. Special tokens are not
/// scored (training never selects them).
std::vector<LineScore> masked_line_scores(const models::MaskedLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::string>& lines, int64_t context,
                                          int64_t batch_rows);

}  // namespace rota::app
