// Sampling text from a causal LM: recurrent-state decoding with temperature and top-k.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "framework/tensor/random.h"
#include "models/language_models.h"

namespace rota::models {

struct GenerationOptions {
  int64_t tokens = 100;      // ids to generate
  double temperature = 1.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // sample among the k most likely ids; 0: all
  uint64_t seed = 0;         // sampling stream
};

/// The next id from one row of logits [V]: argmax when temperature is 0 (lowest id on ties),
/// else a draw from softmax(logits / temperature) restricted to the top_k largest logits.
int64_t sample_next_token(std::span<const float> logits, double temperature, int64_t top_k,
                          Generator& gen);

/// Continues `prompt` (at least one id) with options.tokens sampled ids and returns them.
/// Linear-attention models feed one token at a time through their recurrent state (O(1) per
/// token); models without a recurrent form (softmax attention) re-run the full forward pass
/// on the whole sequence for every new token. on_token, when set, sees each id as it comes.
std::vector<int64_t> generate(const CausalLm& model, std::span<const int64_t> prompt,
                              const GenerationOptions& options,
                              const std::function<void(int64_t)>& on_token = {});

}  // namespace rota::models
