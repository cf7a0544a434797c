// `rota predict`: one JSON line of predictions per input example, from a trained checkpoint.
#pragma once

#include <cstdint>
#include <string>

namespace rota::app {

struct PredictRequest {
  std::string checkpoint;  // run directory or checkpoint directory
  std::string input;       // the examples (see docs/data.md, "Predictions")
  std::string output;      // JSON Lines file; empty: standard output
  /// Input format: "auto" (from the extension), "text", "jsonl", "csv" or "tsv".
  std::string format = "auto";
  /// JSONL / CSV / TSV: the text field (and a second one for sentence pairs); empty: the run's
  /// recipe columns, else "text".
  std::string text_field;
  std::string text_pair_field;
  /// Language models: also list every token's text and log-probability.
  bool token_details = false;
  /// Rows per forward pass.
  int64_t batch_size = 32;
};

/// Classifiers: `{"line":L,"label":NAME,"class":I,"probabilities":{NAME:p,...}}`. Causal LMs:
/// `{"line":L,"tokens":n,"scored":m,"logprob":Σ,"ppl":…}` (and per-token details on request),
/// masked LMs the same with the pseudo-log-likelihood (each token masked in turn). Returns the
/// exit code.
int run_prediction(const PredictRequest& request);

}  // namespace rota::app
