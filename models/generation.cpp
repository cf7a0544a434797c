// Recurrent-state sampling from a causal LM (see generation.h).
#include "models/generation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/autograd/grad_mode.h"

namespace rota::models {

int64_t sample_next_token(std::span<const float> logits, double temperature, int64_t top_k,
                          Generator& gen) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  ROTA_CHECK(vocab > 0, "generate: empty logits");
  ROTA_CHECK(std::isfinite(temperature) && temperature >= 0,
             "generate: temperature must be a finite number >= 0, got {}", temperature);
  ROTA_CHECK(top_k >= 0, "generate: top_k must be >= 0, got {}", top_k);
  if (temperature == 0) {
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  }
  std::vector<int64_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  int64_t keep = vocab;
  if (top_k > 0 && top_k < vocab) {
    keep = top_k;
    std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), [&](int64_t a, int64_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
  }
  double max_logit = -INFINITY;
  for (int64_t i = 0; i < keep; ++i) max_logit = std::max<double>(max_logit, logits[ids[i]]);
  std::vector<double> weights(static_cast<size_t>(keep));
  double total = 0;
  for (int64_t i = 0; i < keep; ++i) {
    weights[i] = std::exp((logits[ids[i]] - max_logit) / temperature);
    total += weights[i];
  }
  double u = gen.next_double() * total;
  for (int64_t i = 0; i < keep; ++i) {
    u -= weights[i];
    if (u < 0) return ids[i];
  }
  return ids[keep - 1];  // u landed on the rounding error at the top
}

std::vector<int64_t> generate(const CausalLm& model, std::span<const int64_t> prompt,
                              const GenerationOptions& options,
                              const std::function<void(int64_t)>& on_token) {
  ROTA_CHECK(!prompt.empty(), "generate: the prompt encodes to no tokens");
  ROTA_CHECK(options.tokens >= 0, "generate: tokens must be >= 0, got {}", options.tokens);
  NoGradGuard no_grad;
  Generator gen(options.seed);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(options.tokens));
  const int64_t vocab = model.encoder().options().vocab_size;
  auto emit = [&](std::span<const float> logits) {
    const int64_t id = sample_next_token(logits, options.temperature, options.top_k, gen);
    out.push_back(id);
    if (on_token) on_token(id);
    return id;
  };
  if (model.supports_step()) {
    EncoderState state = model.initial_state(1);
    Tensor logits;
    auto feed = [&](int64_t id) {
      Tensor ids = Tensor::empty({1}, DType::kI64);
      ids.data<int64_t>()[0] = id;
      logits = model.step(ids, state).to(DType::kF32).contiguous();  // [1, V]
    };
    for (int64_t id : prompt) feed(id);
    for (int64_t t = 0; t < options.tokens; ++t) {
      const int64_t id = emit({logits.data<float>(), static_cast<size_t>(vocab)});
      if (t + 1 < options.tokens) feed(id);
    }
    return out;
  }
  std::vector<int64_t> sequence(prompt.begin(), prompt.end());
  for (int64_t t = 0; t < options.tokens; ++t) {
    const int64_t n = static_cast<int64_t>(sequence.size());
    Tensor ids = Tensor::empty({1, n}, DType::kI64);
    std::copy(sequence.begin(), sequence.end(), ids.data<int64_t>());
    const Tensor logits = model.forward(ids).data().to(DType::kF32).contiguous();  // [1, n, V]
    const int64_t id = emit({logits.data<float>() + (n - 1) * vocab, static_cast<size_t>(vocab)});
    sequence.push_back(id);
  }
  return out;
}

}  // namespace rota::models
