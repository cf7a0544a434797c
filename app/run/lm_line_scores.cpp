// Per-token log-probabilities of lines under a causal or masked LM (see lm_line_scores.h).
#include "app/run/lm_line_scores.h"

#include <algorithm>
#include <cmath>

#include "data/dataset/batch.h"
#include "framework/base/error.h"

namespace rota::app {
namespace {

// One row of a forward pass: `length` input tokens of a line's stream from `start`; for the
// masked LM, position `masked` (window-relative) holds <mask>.
struct ScoreRow {
  size_t line = 0;
  int64_t start = 0;
  int64_t length = 0;
  int64_t masked = -1;
};

// log softmax(logits)[target] for one position's logits [V], in double.
double log_probability(const float* logits, int64_t vocab, int64_t target) {
  double top = logits[0];
  for (int64_t v = 1; v < vocab; ++v) top = std::max(top, static_cast<double>(logits[v]));
  double total = 0;
  for (int64_t v = 0; v < vocab; ++v) total += std::exp(static_cast<double>(logits[v]) - top);
  return static_cast<double>(logits[target]) - top - std::log(total);
}

void record(LineScore& score, int64_t token, double logprob) {
  score.token_logprobs[static_cast<size_t>(token)] = logprob;
  score.scored_mask[static_cast<size_t>(token)] = 1;
  score.logprob_sum += logprob;
  ++score.scored;
}

std::vector<LineScore> encoded(const data::Tokenizer& tokenizer,
                               const std::vector<std::string>& lines) {
  std::vector<LineScore> scores(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    scores[i].ids = tokenizer.encode(lines[i]);
    scores[i].token_logprobs.assign(scores[i].ids.size(), 0.0);
    scores[i].scored_mask.assign(scores[i].ids.size(), 0);
  }
  return scores;
}

// Calls run(rows of one batch) for consecutive groups of up to batch_rows rows.
template <typename Run>
void in_batches(const std::vector<ScoreRow>& rows, int64_t batch_rows, Run&& run) {
  for (size_t first = 0; first < rows.size(); first += static_cast<size_t>(batch_rows)) {
    const size_t last = std::min(rows.size(), first + static_cast<size_t>(batch_rows));
    run(std::vector<ScoreRow>(rows.begin() + static_cast<std::ptrdiff_t>(first),
                              rows.begin() + static_cast<std::ptrdiff_t>(last)));
  }
}

// logits [B, L, V] of a forward pass as contiguous f32.
Tensor f32_logits(const Variable& logits) {
  Tensor values = logits.data().contiguous();
  if (values.dtype() != DType::kF32) values = values.to(DType::kF32);
  return values;
}

}  // namespace

LineContext causal_line_context(const data::Tokenizer& tokenizer, int64_t document_separator) {
  LineContext context;
  if (document_separator >= 0) {
    context.lead = {document_separator};
    return context;
  }
  context.lead_text = "\n";
  context.lead = tokenizer.encode(context.lead_text);
  if (context.lead.empty()) context.lead_text.clear();
  return context;
}

std::vector<LineScore> causal_line_scores(const models::CausalLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::string>& lines,
                                          const LineContext& line_context, int64_t context,
                                          int64_t batch_rows) {
  ROTA_CHECK(context >= 1 && batch_rows >= 1, "predict: context and batch rows must be >= 1");
  std::vector<LineScore> scores = encoded(tokenizer, lines);
  const std::vector<int64_t>& lead = line_context.lead;
  if (!line_context.lead_text.empty()) {
    // The line as it reads after the lead text, where that text keeps its own tokens.
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::vector<int64_t> after = tokenizer.encode(line_context.lead_text + lines[i]);
      if (after.size() >= lead.size() && std::equal(lead.begin(), lead.end(), after.begin())) {
        scores[i].ids.assign(after.begin() + static_cast<std::ptrdiff_t>(lead.size()), after.end());
        scores[i].token_logprobs.assign(scores[i].ids.size(), 0.0);
        scores[i].scored_mask.assign(scores[i].ids.size(), 0);
      }
    }
  }
  const int64_t offset = static_cast<int64_t>(lead.size());  // stream position of ids[0]
  // stream(i)[p]: the lead, then the line's ids.
  const auto stream_at = [&](size_t line, int64_t p) {
    return p < offset ? lead[static_cast<size_t>(p)]
                      : scores[line].ids[static_cast<size_t>(p - offset)];
  };
  std::vector<ScoreRow> rows;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i].ids.empty()) continue;
    // Inputs from the lead's last token (all of a longer lead fits the first window when it
    // can), targets from ids[0].
    const int64_t first = std::max<int64_t>(0, offset - context);
    const int64_t inputs = static_cast<int64_t>(scores[i].ids.size()) + offset - 1;
    for (int64_t start = first; start < inputs; start += context) {
      rows.push_back({i, start, std::min(context, inputs - start), -1});
    }
  }
  const int64_t pad = data::padding_id(tokenizer);
  in_batches(rows, batch_rows, [&](const std::vector<ScoreRow>& batch) {
    const int64_t B = static_cast<int64_t>(batch.size());
    int64_t L = 0;
    for (const ScoreRow& row : batch) L = std::max(L, row.length);
    Tensor ids = Tensor::empty({B, L}, DType::kI64);
    int64_t* id = ids.data<int64_t>();
    std::fill(id, id + B * L, pad);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < batch[b].length; ++j)
        id[b * L + j] = stream_at(batch[b].line, batch[b].start + j);
    }
    const Tensor logits = f32_logits(model.forward(ids));  // [B, L, V]
    const int64_t V = logits.size(2);
    const float* values = logits.data<float>();
    for (int64_t b = 0; b < B; ++b) {
      const ScoreRow& row = batch[b];
      for (int64_t j = 0; j < row.length; ++j) {
        const int64_t target_position = row.start + j + 1;
        if (target_position < offset) continue;  // a lead token
        const double logprob =
            log_probability(values + (b * L + j) * V, V, stream_at(row.line, target_position));
        record(scores[row.line], target_position - offset, logprob);
      }
    }
  });
  return scores;
}

std::vector<LineScore> masked_line_scores(const models::MaskedLm& model,
                                          const data::Tokenizer& tokenizer,
                                          const std::vector<std::string>& lines, int64_t context,
                                          int64_t batch_rows) {
  ROTA_CHECK(context >= 1 && batch_rows >= 1, "predict: context and batch rows must be >= 1");
  std::vector<LineScore> scores = encoded(tokenizer, lines);
  const data::SpecialTokens& specials = tokenizer.specials();
  const int64_t mask_id = specials.require(data::SpecialToken::kMask, "predict (masked LM)");
  std::vector<ScoreRow> rows;
  for (size_t i = 0; i < scores.size(); ++i) {
    const int64_t n = static_cast<int64_t>(scores[i].ids.size());
    for (int64_t start = 0; start < n; start += context) {
      const int64_t length = std::min(context, n - start);
      for (int64_t j = 0; j < length; ++j) {
        if (!specials.is_special(scores[i].ids[static_cast<size_t>(start + j)]))
          rows.push_back({i, start, length, j});
      }
    }
  }
  const int64_t pad = data::padding_id(tokenizer);
  in_batches(rows, batch_rows, [&](const std::vector<ScoreRow>& batch) {
    const int64_t B = static_cast<int64_t>(batch.size());
    int64_t L = 0;
    for (const ScoreRow& row : batch) L = std::max(L, row.length);
    Tensor ids = Tensor::empty({B, L}, DType::kI64);
    Tensor key_mask = Tensor::empty({B, L}, DType::kF32);
    int64_t* id = ids.data<int64_t>();
    float* real = key_mask.data<float>();
    std::fill(id, id + B * L, pad);
    std::fill(real, real + B * L, 0.0f);
    for (int64_t b = 0; b < B; ++b) {
      const std::vector<int64_t>& line = scores[batch[b].line].ids;
      for (int64_t j = 0; j < batch[b].length; ++j) {
        id[b * L + j] =
            j == batch[b].masked ? mask_id : line[static_cast<size_t>(batch[b].start + j)];
        real[b * L + j] = 1.0f;
      }
    }
    const Tensor logits = f32_logits(model.forward(ids, key_mask));  // [B, L, V]
    const int64_t V = logits.size(2);
    const float* values = logits.data<float>();
    for (int64_t b = 0; b < B; ++b) {
      const ScoreRow& row = batch[b];
      const int64_t token = row.start + row.masked;
      const int64_t target = scores[row.line].ids[static_cast<size_t>(token)];
      record(scores[row.line], token,
             log_probability(values + (b * L + row.masked) * V, V, target));
    }
  });
  return scores;
}

}  // namespace rota::app
