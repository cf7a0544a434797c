// Recurrent-state sampling from a causal LM (see generation.h).
#include "models/generation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/autograd/grad_mode.h"
#include "framework/base/seed_mix.h"

namespace rota::models {
namespace {

void check_sampling(std::span<const float> logits, double temperature, int64_t top_k,
                    double top_p) {
  ROTA_CHECK(!logits.empty(), "generate: empty logits");
  ROTA_CHECK(std::isfinite(temperature) && temperature >= 0,
             "generate: temperature must be a finite number >= 0, got {}", temperature);
  ROTA_CHECK(top_k >= 0, "generate: top_k must be >= 0, got {}", top_k);
  ROTA_CHECK(top_p > 0 && top_p <= 1, "generate: top_p must be in (0, 1], got {}", top_p);
}

int64_t argmax(std::span<const float> logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

// exp((logit − max) / temperature) of each id of `ids` (the max over `ids`).
std::vector<double> tempered_weights(std::span<const float> logits, const std::vector<int64_t>& ids,
                                     double temperature) {
  double max_logit = -INFINITY;
  for (int64_t id : ids) max_logit = std::max<double>(max_logit, logits[id]);
  std::vector<double> weights(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    weights[i] = std::exp((logits[ids[i]] - max_logit) / temperature);
  }
  return weights;
}

}  // namespace

void check_generation_options(const GenerationOptions& options) {
  ROTA_CHECK(options.tokens >= 0, "generate: tokens must be >= 0, got {}", options.tokens);
  ROTA_CHECK(std::isfinite(options.temperature) && options.temperature >= 0,
             "generate: temperature must be a finite number >= 0, got {}", options.temperature);
  ROTA_CHECK(options.top_k >= 0, "generate: top_k must be >= 0, got {}", options.top_k);
  ROTA_CHECK(options.top_p > 0 && options.top_p <= 1, "generate: top_p must be in (0, 1], got {}",
             options.top_p);
  ROTA_CHECK(std::isfinite(options.repetition_penalty) && options.repetition_penalty > 0,
             "generate: repetition_penalty must be a finite number > 0, got {}",
             options.repetition_penalty);
  ROTA_CHECK(options.vocab_limit >= 0, "generate: vocab_limit must be >= 0, got {}",
             options.vocab_limit);
}

std::vector<int64_t> sampling_candidates(std::span<const float> logits, double temperature,
                                         int64_t top_k, double top_p) {
  check_sampling(logits, temperature, top_k, top_p);
  if (temperature == 0) return {argmax(logits)};
  const int64_t vocab = static_cast<int64_t>(logits.size());
  std::vector<int64_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  auto more_likely = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  int64_t keep = vocab;
  if (top_k > 0 && top_k < vocab) {
    keep = top_k;
    std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), more_likely);
    ids.resize(static_cast<size_t>(keep));
  } else if (top_p < 1) {
    std::sort(ids.begin(), ids.end(), more_likely);
  }
  if (top_p < 1) {
    const std::vector<double> weights = tempered_weights(logits, ids, temperature);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    double cumulative = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      cumulative += weights[i];
      if (cumulative / total >= top_p) {
        ids.resize(i + 1);
        break;
      }
    }
  }
  return ids;
}

int64_t sample_next_token(std::span<const float> logits, const GenerationOptions& options,
                          Generator& gen) {
  check_sampling(logits, options.temperature, options.top_k, options.top_p);
  if (options.temperature == 0) return argmax(logits);
  const std::vector<int64_t> ids =
      sampling_candidates(logits, options.temperature, options.top_k, options.top_p);
  const std::vector<double> weights = tempered_weights(logits, ids, options.temperature);
  double total = 0;
  for (double w : weights) total += w;
  double u = gen.next_double() * total;
  for (size_t i = 0; i < ids.size(); ++i) {
    u -= weights[i];
    if (u < 0) return ids[i];
  }
  return ids.back();  // u landed on the rounding error at the top
}

int64_t sample_next_token(std::span<const float> logits, double temperature, int64_t top_k,
                          Generator& gen) {
  GenerationOptions options;
  options.temperature = temperature;
  options.top_k = top_k;
  return sample_next_token(logits, options, gen);
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> context,
                              double penalty) {
  ROTA_CHECK(std::isfinite(penalty) && penalty > 0,
             "generate: repetition_penalty must be a finite number > 0, got {}", penalty);
  std::vector<int64_t> distinct(context.begin(), context.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int64_t id : distinct) {
    ROTA_CHECK(id >= 0 && id < static_cast<int64_t>(logits.size()),
               "generate: id {} is outside the vocabulary [0, {})", id, logits.size());
    float& logit = logits[static_cast<size_t>(id)];
    logit = static_cast<float>(logit > 0 ? logit / penalty : logit * penalty);
  }
}

uint64_t sample_seed(uint64_t seed, int64_t sample) {
  ROTA_CHECK(sample >= 0, "generate: sample index {} < 0", sample);
  return sample == 0 ? seed : mix_seed({seed, static_cast<uint64_t>(sample)});
}

namespace {

// One batch of rows decoded in lockstep: every row starts at position 0 and feeds one id per
// step, its prompt's ids first, then its sampled ones, so all rows of the batch stand at the same
// position (the recurrent state holds one position for all its rows) whatever their prompt
// lengths. A row samples from the step that reads its prompt's last id on. Its ids land in `out`.
class BatchDecoder {
 public:
  BatchDecoder(const CausalLm& model, std::span<const GenerationRow> rows,
               std::span<const int64_t> members, const GenerationOptions& options,
               const RowTokenCallback& on_token, std::vector<std::vector<int64_t>>& out,
               GenerationStats& stats)
      : model_(model),
        rows_(rows),
        members_(members),
        options_(options),
        on_token_(on_token),
        out_(out),
        stats_(stats),
        vocab_(model.encoder().options().vocab_size),
        active_(members.size(), true),
        remaining_(static_cast<int64_t>(members.size())),
        scratch_(static_cast<size_t>(vocab_)) {
    for (int64_t row : members_) {
      gens_.emplace_back(rows_[row].seed);
      // The ids the repetition penalty applies to: the prompt, then each sampled id.
      if (options_.repetition_penalty != 1) seen_.push_back(rows_[row].prompt);
    }
  }

  void run() {
    if (options_.tokens == 0) return;
    ++stats_.batches;
    stats_.rows_per_batch = std::max(stats_.rows_per_batch, batch());
    if (model_.supports_step()) {
      run_recurrent();
    } else {
      run_full_forward();
    }
  }

 private:
  int64_t batch() const { return static_cast<int64_t>(members_.size()); }
  int64_t prompt_length(int64_t b) const {
    return static_cast<int64_t>(rows_[members_[b]].prompt.size());
  }

  // Row b's id at `position`: its prompt's, then its sampled ones; a row that has ended keeps
  // repeating its last id (its outputs are not read).
  int64_t id_at(int64_t b, int64_t position) const {
    const std::vector<int64_t>& prompt = rows_[members_[b]].prompt;
    if (position < prompt_length(b)) return prompt[static_cast<size_t>(position)];
    const std::vector<int64_t>& sampled = out_[members_[b]];
    const size_t k = static_cast<size_t>(position - prompt_length(b));
    return k < sampled.size() ? sampled[k] : sampled.back();
  }

  // Samples the next id of every active row whose prompt the step at `position` has read, from
  // logits rows [batch, V] (row b at logits + b · stride); false when no row is left.
  bool sample(const float* logits, int64_t stride, int64_t position) {
    for (int64_t b = 0; b < batch(); ++b) {
      if (!active_[b] || position < prompt_length(b) - 1) continue;
      const int64_t row = members_[b];
      std::vector<int64_t>& ids = out_[row];
      const int64_t drawable =
          options_.vocab_limit > 0 ? std::min(options_.vocab_limit, vocab_) : vocab_;
      std::span<const float> row_logits(logits + b * stride, static_cast<size_t>(drawable));
      if (options_.repetition_penalty != 1) {
        std::copy(row_logits.begin(), row_logits.end(), scratch_.begin());
        std::span<float> penalised(scratch_.data(), row_logits.size());
        apply_repetition_penalty(penalised, seen_[b], options_.repetition_penalty);
        row_logits = penalised;
      }
      const int64_t id = sample_next_token(row_logits, options_, gens_[b]);
      ids.push_back(id);
      if (options_.repetition_penalty != 1) seen_[b].push_back(id);
      const bool go_on = on_token_ ? on_token_(row, id) : true;
      if (!go_on || static_cast<int64_t>(ids.size()) == options_.tokens) {
        active_[b] = false;
        --remaining_;
      }
    }
    return remaining_ > 0;
  }

  // Linear attention and hybrids: one step of the B-row state per position, from position 0.
  void run_recurrent() {
    EncoderState state = model_.initial_state(batch());
    for (int64_t position = 0;; ++position) {
      Tensor ids = Tensor::empty({batch()}, DType::kI64);  // [B]
      for (int64_t b = 0; b < batch(); ++b) ids.data<int64_t>()[b] = id_at(b, position);
      const Tensor logits = model_.step(ids, state).to(DType::kF32).contiguous();  // [B, V]
      ++stats_.model_calls;
      if (!sample(logits.data<float>(), vocab_, position)) return;
    }
  }

  // Softmax attention: the full forward pass over the B sequences of length n for every n from
  // the shortest prompt's length on; a row samples from the pass over its whole prompt on.
  void run_full_forward() {
    int64_t shortest = prompt_length(0);
    for (int64_t b = 1; b < batch(); ++b) shortest = std::min(shortest, prompt_length(b));
    for (int64_t n = shortest;; ++n) {
      Tensor ids = Tensor::empty({batch(), n}, DType::kI64);  // [B, n]
      for (int64_t b = 0; b < batch(); ++b) {
        for (int64_t p = 0; p < n; ++p) ids.data<int64_t>()[b * n + p] = id_at(b, p);
      }
      const Tensor logits = model_.forward(ids).data().to(DType::kF32).contiguous();  // [B, n, V]
      ++stats_.model_calls;
      if (!sample(logits.data<float>() + (n - 1) * vocab_, n * vocab_, n - 1)) return;
    }
  }

  const CausalLm& model_;
  std::span<const GenerationRow> rows_;
  std::span<const int64_t> members_;
  const GenerationOptions& options_;
  const RowTokenCallback& on_token_;
  std::vector<std::vector<int64_t>>& out_;
  GenerationStats& stats_;
  int64_t vocab_;
  std::vector<Generator> gens_;
  std::vector<bool> active_;
  int64_t remaining_;
  std::vector<std::vector<int64_t>> seen_;  // per batch row, with the penalty
  std::vector<float> scratch_;
};

}  // namespace

std::vector<std::vector<int64_t>> generate_batch(const CausalLm& model,
                                                 std::span<const GenerationRow> rows,
                                                 const GenerationOptions& options,
                                                 const RowTokenCallback& on_token,
                                                 GenerationStats* stats) {
  check_generation_options(options);
  for (const GenerationRow& row : rows) {
    ROTA_CHECK(!row.prompt.empty(), "generate: the prompt encodes to no tokens");
  }
  // Rows by prompt length (then row order), so that a batch's rows wait little for each other.
  std::vector<int64_t> order(rows.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return rows[a].prompt.size() < rows[b].prompt.size();
  });
  NoGradGuard no_grad;
  GenerationStats counted;
  std::vector<std::vector<int64_t>> out(rows.size());
  for (auto& ids : out) ids.reserve(static_cast<size_t>(options.tokens));
  for (size_t first = 0; first < order.size(); first += kMaxRowsPerBatch) {
    const size_t count = std::min<size_t>(kMaxRowsPerBatch, order.size() - first);
    const std::span<const int64_t> members(order.data() + first, count);
    BatchDecoder(model, rows, members, options, on_token, out, counted).run();
  }
  if (stats != nullptr) *stats = counted;
  return out;
}

std::vector<int64_t> generate(const CausalLm& model, std::span<const int64_t> prompt,
                              const GenerationOptions& options,
                              const std::function<void(int64_t)>& on_token) {
  ROTA_CHECK(!prompt.empty(), "generate: the prompt encodes to no tokens");
  const GenerationRow rows[1] = {
      {std::vector<int64_t>(prompt.begin(), prompt.end()), options.seed}};
  RowTokenCallback each;
  if (on_token) {
    each = [&](int64_t, int64_t id) {
      on_token(id);
      return true;
    };
  }
  return std::move(generate_batch(model, rows, options, each)[0]);
}

}  // namespace rota::models
