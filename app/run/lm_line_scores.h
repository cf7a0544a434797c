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

/// What precedes a line in the token stream a causal LM trained on, so that a line's first
/// token is scored after context of the kind the model saw there.
struct LineContext {
  /// Token ids before the line's first token; empty leaves the first token unscored.
  std::vector<int64_t> lead;
  /// The text `lead` encodes ("\n"), or empty when the lead is a document separator token. A
  /// line is encoded as it reads after this text (some tokenizers, e.g. a Metaspace one, write a
  /// line's first word differently at the start of a text).
  std::string lead_text;
};

/// The context of a line: the run's document separator token when each training document was
/// a record (`document_separator` >= 0: a record starts after the previous one's separator);
/// otherwise the tokens of a line break, which every line but the first follows in a training
/// text — `<eos>` for the word and SentencePiece tokenizers (they write a line break as
/// `<eos>`), byte 10 for bytes, the tokenizer's own newline token(s) for a Hugging Face one,
/// nothing for a tokenizer that drops line breaks. Never `<bos>`, which no training stream has.
LineContext causal_line_context(const data::Tokenizer& tokenizer, int64_t document_separator);

/// Causal LM: log p(ids[t] | context.lead, ids[<t]). A line longer than `context` tokens is
/// scored in consecutive non-overlapping windows of `context` inputs over lead + ids, each
/// window seeing only itself, exactly as `rota eval` scores a split. Rows of up to
/// `batch_rows` windows share a forward pass.
std::vector<LineScore> causal_line_scores(const models::CausalLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::string>& lines,
                                          const LineContext& line_context, int64_t context,
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
