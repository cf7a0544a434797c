// Sampling text from a causal LM: recurrent-state decoding, temperature, top-k, top-p, repetition
// penalty, several rows (prompts × samples) decoded as batches.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "framework/tensor/random.h"
#include "models/language_models.h"

namespace rota::models {

struct GenerationOptions {
  int64_t tokens = 100;             // ids to generate (per row)
  double temperature = 1.0;         // 0: greedy (argmax)
  int64_t top_k = 0;                // sample among the k most likely ids; 0: all
  double top_p = 1.0;               // nucleus: the most likely ids reaching p (0 < p <= 1); 1: off
  double repetition_penalty = 1.0;  // CTRL's penalty on ids already in the row (> 0); 1: off
  uint64_t seed = 0;                // sampling stream (generate(); generate_batch takes its rows')
  /// Draw only ids below this (a model with more output rows than its tokenizer has ids, see
  /// model.vocab_size); 0: every row of the logits.
  int64_t vocab_limit = 0;
};

/// Throws rota::Error naming the first setting out of range (tokens < 0, temperature not finite
/// or < 0, top_k < 0, top_p outside (0, 1], repetition_penalty not finite or <= 0).
void check_generation_options(const GenerationOptions& options);

/// The ids a draw from one row of logits [V] may give, in the order the sampler walks them. At
/// temperature 0: the argmax alone (lowest id on ties). Else the top_k largest logits (all when
/// top_k is 0 or >= V), most likely first (ties: lowest id first) when top_k or top_p cuts,
/// in id order when neither does; with top_p < 1 only the shortest prefix of that order whose
/// probability under softmax(logits / temperature) over the top-k set reaches top_p (the id that
/// reaches it is kept).
std::vector<int64_t> sampling_candidates(std::span<const float> logits, double temperature,
                                         int64_t top_k, double top_p);

/// The next id from one row of logits [V]: argmax when temperature is 0 (lowest id on ties),
/// else a draw from softmax(logits / temperature) restricted to sampling_candidates (one
/// gen.next_double() per draw). options.tokens, seed and repetition_penalty are not used here.
int64_t sample_next_token(std::span<const float> logits, const GenerationOptions& options,
                          Generator& gen);
/// The same without top-p.
int64_t sample_next_token(std::span<const float> logits, double temperature, int64_t top_k,
                          Generator& gen);

/// CTRL's repetition penalty (Keskar et al. 2019, as Hugging Face applies it): for every distinct
/// id of `context`, a logit > 0 becomes logit / penalty and a logit <= 0 logit · penalty.
void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> context,
                              double penalty);

/// The seed of sample `sample` (0, 1, …) of a prompt: `seed` itself for sample 0 (one sample is
/// what generate() with that seed gives), a mix of both for the others.
uint64_t sample_seed(uint64_t seed, int64_t sample);

/// One row of a batched generation: its prompt (at least one id) and its sampling seed.
struct GenerationRow {
  std::vector<int64_t> prompt;
  uint64_t seed = 0;
};

/// Sees each sampled id of a row as it comes; returning false ends that row (a stop string).
using RowTokenCallback = std::function<bool(int64_t row, int64_t id)>;

/// At most this many rows decode together; more rows form further batches.
inline constexpr int64_t kMaxRowsPerBatch = 64;

/// What a generate_batch call did: its batches, their largest row count, and the model calls
/// (recurrent steps, or full forward passes for softmax models) of all batches together.
struct GenerationStats {
  int64_t batches = 0;
  int64_t rows_per_batch = 0;
  int64_t model_calls = 0;
};

/// Continues every row with up to options.tokens ids (options.seed unused: each row has its own)
/// and returns them, row by row. Each row's ids equal what generate() gives its prompt with its
/// seed (same model, same options): rows share only the matrix products. The rows decode as
/// batches of up to kMaxRowsPerBatch rows (rows in order of prompt length, so one batch when
/// there are no more), whatever their prompt lengths: a batch's rows run in lockstep from
/// position 0, each feeding its prompt's ids and then its sampled ones, so they stand at one
/// position, as the recurrent state requires (EncoderState::position); a row samples from the
/// step that reads its prompt's last id on. Linear attention and hybrids step the recurrent state
/// of B rows (longest prompt + tokens − 1 steps at most); softmax models run one forward pass
/// over the B sequences per length, from the shortest prompt's on. A row ended by on_token (or
/// by reaching options.tokens before the others) is stepped along with its batch until the
/// batch ends, its outputs unused. The repetition penalty, when not 1, applies to each row's
/// prompt and sampled ids before temperature, top-k and top-p (also when greedy). `stats`, when
/// given, receives what the call did.
std::vector<std::vector<int64_t>> generate_batch(const CausalLm& model,
                                                 std::span<const GenerationRow> rows,
                                                 const GenerationOptions& options,
                                                 const RowTokenCallback& on_token = {},
                                                 GenerationStats* stats = nullptr);

/// Continues `prompt` (at least one id) with options.tokens sampled ids and returns them.
/// Linear-attention models feed one token at a time through their recurrent state (O(1) per
/// token); models without a recurrent form (softmax attention) re-run the full forward pass
/// on the whole sequence for every new token. on_token, when set, sees each id as it comes.
std::vector<int64_t> generate(const CausalLm& model, std::span<const int64_t> prompt,
                              const GenerationOptions& options,
                              const std::function<void(int64_t)>& on_token = {});

}  // namespace rota::models
