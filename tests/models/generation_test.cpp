// Text generation: greedy decoding == argmax of full forward passes, sampling statistics, API
// edges.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/position/lrpe.h"
#include "models/generation.h"
#include "models/language_models.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::AttentionFamily;
using models::CausalLm;
using models::GenerationOptions;
using models::ModelOptions;
using testing::allclose;

constexpr int64_t kVocab = 50;
constexpr int64_t kPromptLength = 5;
constexpr int64_t kGenerated = 24;
/// Relative rounding of the f64 → f32 conversion generate() applies to every logits row.
constexpr double kF32Rounding = 1.0 / (1 << 23);

/// Step-vs-forward tolerance per dtype. f64: both paths agree to ~1e-14 (different summation
/// orders over <= 29 tokens); 1e-9 leaves room without hiding any real mismatch. f32: the
/// recurrent state and the chunked forward sum the same ≤ 29 outer products in different
/// orders (~29·6e-8 per layer, two layers, LayerNorm, head) so ~1e-6 is expected; 1e-4 relative
/// (plus 1e-5 absolute for logits near zero) keeps a margin of ~10×.
struct Tolerance {
  double rtol;
  double atol;
};
Tolerance tolerance_for(DType dtype) {
  return dtype == DType::kF64 ? Tolerance{1e-9, 1e-10} : Tolerance{1e-4, 1e-5};
}

ModelOptions tiny_causal_lm(DType dtype) {
  ModelOptions o;
  o.kind = models::ModelKind::kCausalLm;
  o.vocab_size = kVocab;
  o.dim = 16;
  o.layers = 2;
  o.heads = 2;
  o.ffn_dim = 32;
  o.init_scheme = models::InitScheme::kNormal;  // N(0, init_std²), not the default
  o.init_std = 0.3;  // large enough that every layer and the position encoding move the logits
  o.attention.chunk_size = 8;  // the causal forward kernel crosses several chunks
  o.dtype = dtype;
  return o;
}

Tensor ids_tensor(const std::vector<int64_t>& ids) {  // → [1, N] i64
  return tensor_from(std::vector<double>(ids.begin(), ids.end()), {1, int64_t(ids.size())},
                     DType::kI64);
}

std::vector<int64_t> random_prompt(Generator& gen) {
  std::vector<int64_t> prompt(kPromptLength);
  for (auto& id : prompt) id = static_cast<int64_t>(gen.next_below(kVocab));
  return prompt;
}

/// Lowest index of the largest value.
int64_t argmax_lowest(const std::vector<double>& row) {
  int64_t best = 0;
  for (int64_t i = 1; i < int64_t(row.size()); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

/// Logits of the last position of a full forward pass over `sequence` → [V] as doubles.
std::vector<double> last_row_logits(const CausalLm& model, const std::vector<int64_t>& sequence) {
  const int64_t n = int64_t(sequence.size());
  const Tensor logits = model.forward(ids_tensor(sequence)).data();  // [1, N, V]
  return logits.slice(1, n - 1, n).reshape({kVocab}).to_double_vector();
}

/// Greedy decoding by a full forward pass over the growing sequence for every new id. Asserts
/// (as a precondition of comparing with another decoding path) that each chosen id wins by more
/// than the two paths may differ: 2·((rtol + f32 rounding)·|top| + atol).
std::vector<int64_t> greedy_by_full_forward(const CausalLm& model,
                                            const std::vector<int64_t>& prompt, int64_t count,
                                            Tolerance tol) {
  std::vector<int64_t> sequence = prompt;
  std::vector<int64_t> generated;
  for (int64_t t = 0; t < count; ++t) {
    const std::vector<double> row = last_row_logits(model, sequence);
    const int64_t best = argmax_lowest(row);
    double runner_up = -INFINITY;
    for (int64_t i = 0; i < kVocab; ++i) {
      if (i != best) runner_up = std::max(runner_up, row[i]);
    }
    const double needed = 2 * ((tol.rtol + kF32Rounding) * std::abs(row[best]) + tol.atol);
    EXPECT_GT(row[best] - runner_up, needed)
        << "ill-conditioned reference at t=" << t << ": the argmax is not decided by the logits";
    generated.push_back(best);
    sequence.push_back(best);
  }
  return generated;
}

/// Draws by a full forward pass for every new id, through the same sampler and stream.
std::vector<int64_t> sampled_by_full_forward(const CausalLm& model,
                                             const std::vector<int64_t>& prompt,
                                             const GenerationOptions& options) {
  Generator gen(options.seed);
  std::vector<int64_t> sequence = prompt;
  std::vector<int64_t> generated;
  for (int64_t t = 0; t < options.tokens; ++t) {
    const std::vector<double> row = last_row_logits(model, sequence);
    const std::vector<float> row_f32(row.begin(), row.end());
    const int64_t id = models::sample_next_token(row_f32, options.temperature, options.top_k, gen);
    generated.push_back(id);
    sequence.push_back(id);
  }
  return generated;
}

/// step() over every id of `sequence` from a fresh state equals the rows of one forward pass.
void expect_step_logits_equal_forward(const CausalLm& model, const std::vector<int64_t>& sequence,
                                      Tolerance tol, const std::string& label) {
  const int64_t n = int64_t(sequence.size());
  const Tensor full = model.forward(ids_tensor(sequence)).data();  // [1, N, V]
  auto state = model.initial_state(1);
  for (int64_t t = 0; t < n; ++t) {
    const Tensor logits = model.step(tensor_from({double(sequence[t])}, {1}, DType::kI64), state);
    EXPECT_TRUE(allclose(logits.reshape({kVocab}), full.slice(1, t, t + 1).reshape({kVocab}),
                         tol.rtol, tol.atol))
        << label << " position " << t;
  }
}

// ---------------------------------------------------------------------------------------------
// Greedy generation through the recurrent state (linear attention).

/// Greedy generation (recurrent state / caches) from a random prompt drawn with prompt_seed
/// equals argmax of full forward passes, and every position's step logits equal the forward's.
void expect_greedy_generation_equals_forward(const CausalLm& model, uint64_t prompt_seed,
                                             DType dtype, const std::string& name) {
  Generator prompt_gen(prompt_seed);
  const std::vector<int64_t> prompt = random_prompt(prompt_gen);
  const Tolerance tol = tolerance_for(dtype);
  GenerationOptions options;
  options.tokens = kGenerated;
  options.temperature = 0;
  const std::vector<int64_t> generated = models::generate(model, prompt, options);
  const std::vector<int64_t> reference = greedy_by_full_forward(model, prompt, kGenerated, tol);
  EXPECT_EQ(generated, reference) << name;
  std::vector<int64_t> sequence = prompt;
  sequence.insert(sequence.end(), reference.begin(), reference.end());
  expect_step_logits_equal_forward(model, sequence, tol, name);
}

struct LinearCase {
  std::string name;
  nn::PositionEncoding position;  // LRPE cases: the core, with a learnable Householder P
  DType dtype;
};

std::ostream& operator<<(std::ostream& os, const LinearCase& c) {
  return os << c.name;
}

ModelOptions linear_options(const LinearCase& c) {
  ModelOptions o = tiny_causal_lm(c.dtype);
  o.position = c.position;
  return o;
}

/// LRPE with the given core and a learnable Householder P.
nn::LrpeOptions lrpe_householder(backend::LrpeCore core) {
  nn::LrpeOptions l;
  l.core = core;
  l.p = backend::LrpeP::kHouseholder;
  l.learn_householder = true;
  return l;
}

std::vector<LinearCase> linear_cases() {
  using backend::LrpeCore;
  std::vector<LinearCase> cases;
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const std::string suffix = dtype == DType::kF64 ? "F64" : "F32";
    cases.push_back({"LrpeType1Householder" + suffix, lrpe_householder(LrpeCore::kUnitary), dtype});
    cases.push_back(
        {"LrpeType2Householder" + suffix, lrpe_householder(LrpeCore::kOrthogonal), dtype});
    cases.push_back(
        {"LrpeType3Householder" + suffix, lrpe_householder(LrpeCore::kPermutation), dtype});
    cases.push_back({"Rope" + suffix, nn::RopePosition{}, dtype});
    cases.push_back({"PermuteFormer" + suffix, nn::PermuteFormerPosition{}, dtype});
    cases.push_back({"None" + suffix, nn::NoPosition{}, dtype});
    cases.push_back({"Sinusoidal" + suffix, nn::SinusoidalPosition{}, dtype});
    cases.push_back({"LearnedAbsolute" + suffix, nn::LearnedPosition{64}, dtype});
  }
  return cases;
}

class LinearGreedyGeneration : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearGreedyGeneration, EqualsArgmaxOfFullForwardAndStepLogitsMatch) {
  const LinearCase& c = GetParam();
  Generator init_gen(21);
  CausalLm model(linear_options(c), init_gen, nullptr);
  model.eval();
  ASSERT_TRUE(model.supports_step());
  expect_greedy_generation_equals_forward(model, 22, c.dtype, c.name);
}

INSTANTIATE_TEST_SUITE_P(Encodings, LinearGreedyGeneration, ::testing::ValuesIn(linear_cases()),
                         [](const ::testing::TestParamInfo<LinearCase>& info) {
                           return info.param.name;
                         });

// ---------------------------------------------------------------------------------------------
// Greedy generation without a recurrent form (softmax attention): full forward passes.

/// The softmax encodings these tests run, by test name.
nn::PositionEncoding softmax_encoding(const std::string& name) {
  if (name == "none") return nn::NoPosition{};
  if (name == "sinusoidal") return nn::SinusoidalPosition{};
  if (name == "learned") return nn::LearnedPosition{64};
  if (name == "rope") return nn::RopePosition{};
  if (name == "alibi") return nn::AlibiPosition{};
  if (name == "t5") return nn::T5Position{};
  throw Error("unknown test encoding '" + name + "'");
}

ModelOptions softmax_options(const std::string& encoding) {
  ModelOptions o = tiny_causal_lm(DType::kF64);
  o.attention_family = AttentionFamily::kSoftmax;
  o.position = softmax_encoding(encoding);
  return o;
}

class SoftmaxGreedyGeneration : public ::testing::TestWithParam<std::string> {};

TEST_P(SoftmaxGreedyGeneration, EqualsArgmaxOfFullForward) {
  Generator init_gen(31);
  CausalLm model(softmax_options(GetParam()), init_gen, nullptr);
  model.eval();
  ASSERT_FALSE(model.supports_step());
  Generator prompt_gen(32);
  const std::vector<int64_t> prompt = random_prompt(prompt_gen);

  GenerationOptions options;
  options.tokens = kGenerated;
  options.temperature = 0;
  const std::vector<int64_t> generated = models::generate(model, prompt, options);
  EXPECT_EQ(generated,
            greedy_by_full_forward(model, prompt, kGenerated, tolerance_for(DType::kF64)))
      << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Encodings, SoftmaxGreedyGeneration,
                         ::testing::Values("none", "sinusoidal", "learned", "rope", "alibi", "t5"));

TEST(SoftmaxCausalLm, HasNoRecurrentStep) {
  Generator init_gen(33);
  CausalLm model(softmax_options("rope"), init_gen, nullptr);
  auto state = model.initial_state(1);
  EXPECT_THROW(model.step(tensor_from({1}, {1}, DType::kI64), state), Error);
}

// ---------------------------------------------------------------------------------------------
// Hybrid stacks: linear blocks keep their recurrent state, softmax blocks a key/value cache.

struct HybridCase {
  std::string name;
  DType dtype;
  ModelOptions options;
};

std::ostream& operator<<(std::ostream& os, const HybridCase& c) {
  return os << c.name;
}

std::vector<HybridCase> hybrid_cases() {
  std::vector<HybridCase> cases;
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const std::string suffix = dtype == DType::kF64 ? "F64" : "F32";
    // Linear LRPE stack, every second block softmax with RoPE (blocks 1 and 3 of 4).
    ModelOptions o = tiny_causal_lm(dtype);
    o.layers = 4;
    o.position = lrpe_householder(backend::LrpeCore::kOrthogonal);
    models::HybridOptions h;
    h.blocks = {1, 3};
    h.attention_family = AttentionFamily::kSoftmax;
    h.position = nn::RopePosition{};
    o.hybrid = h;
    cases.push_back({"LinearLrpeEverySecondSoftmaxRope" + suffix, dtype, o});
    // A sliding window shorter than the generated text: the cache drops old keys.
    o.hybrid->softmax.window = 4;
    cases.push_back({"SoftmaxRopeWindow4" + suffix, dtype, o});
    // Sinusoidal embeddings for the whole stack, a windowed Shaw block (its own mask path).
    ModelOptions s = tiny_causal_lm(dtype);
    s.layers = 3;
    s.position = nn::SinusoidalPosition{};
    models::HybridOptions shaw_block;
    shaw_block.blocks = {0};
    shaw_block.attention_family = AttentionFamily::kSoftmax;
    nn::ShawPosition shaw;
    shaw.clip = 3;
    shaw.values = true;
    shaw_block.position = shaw;
    shaw_block.softmax.window = 5;
    s.hybrid = shaw_block;
    cases.push_back({"SinusoidalShawWindow5" + suffix, dtype, s});
    // A softmax ALiBi stack with one linear LRPE block (decay by depth, output gate).
    ModelOptions a = tiny_causal_lm(dtype);
    a.layers = 3;
    a.attention_family = AttentionFamily::kSoftmax;
    a.position = nn::AlibiPosition{};
    models::HybridOptions lin;
    lin.blocks = {1};
    lin.attention_family = AttentionFamily::kLinear;
    lin.attention.chunk_size = 8;
    lin.attention.decay.schedule = nn::DecaySchedule::kTransNormer;
    lin.attention.output_gate = nn::OutputGate::kSwish;
    lin.position = lrpe_householder(backend::LrpeCore::kUnitary);
    a.hybrid = lin;
    cases.push_back({"SoftmaxAlibiWithLinearLrpeBlock" + suffix, dtype, a});
    // Gated stacks: GLA or Gated DeltaNet blocks around a softmax block, a softmax stack with
    // one Mamba-2 (SSD) block, an LRPE stack whose decay is learned.
    ModelOptions g = tiny_causal_lm(dtype);
    g.layers = 3;
    g.position = nn::NoPosition{};
    g.attention.state_gate.gating = nn::StateGating::kGla;
    g.attention.state_gate.gla_rank = 4;
    models::HybridOptions rope_block;
    rope_block.blocks = {1};
    rope_block.attention_family = AttentionFamily::kSoftmax;
    rope_block.position = nn::RopePosition{};
    g.hybrid = rope_block;
    cases.push_back({"GlaWithSoftmaxRopeBlock" + suffix, dtype, g});
    ModelOptions d = tiny_causal_lm(dtype);
    d.layers = 3;
    d.position = nn::NoPosition{};
    d.attention.state_gate.gating = nn::StateGating::kSsd;
    d.attention.state_gate.rule = nn::UpdateRule::kDelta;
    models::HybridOptions nope_block;
    nope_block.blocks = {2};
    nope_block.attention_family = AttentionFamily::kSoftmax;
    d.hybrid = nope_block;
    cases.push_back({"GatedDeltaNetWithSoftmaxBlock" + suffix, dtype, d});
    ModelOptions m = tiny_causal_lm(dtype);
    m.layers = 2;
    m.attention_family = AttentionFamily::kSoftmax;
    m.position = nn::RopePosition{};
    models::HybridOptions ssd_block;
    ssd_block.blocks = {0};
    ssd_block.attention_family = AttentionFamily::kLinear;
    ssd_block.attention.state_gate.gating = nn::StateGating::kSsd;
    m.hybrid = ssd_block;
    cases.push_back({"SoftmaxRopeWithSsdBlock" + suffix, dtype, m});
    ModelOptions l = tiny_causal_lm(dtype);
    l.layers = 2;
    l.position = lrpe_householder(backend::LrpeCore::kOrthogonal);
    l.attention.decay.schedule = nn::DecaySchedule::kRetNet;
    l.attention.decay.learnable = true;
    models::HybridOptions window_block;
    window_block.blocks = {0};
    window_block.attention_family = AttentionFamily::kSoftmax;
    window_block.position = nn::RopePosition{};
    window_block.softmax.window = 3;
    l.hybrid = window_block;
    cases.push_back({"LearnableDecayLrpeWithWindowBlock" + suffix, dtype, l});
  }
  return cases;
}

class HybridGreedyGeneration : public ::testing::TestWithParam<HybridCase> {};

TEST_P(HybridGreedyGeneration, EqualsArgmaxOfFullForwardAndStepLogitsMatch) {
  const HybridCase& c = GetParam();
  Generator init_gen(41);
  CausalLm model(c.options, init_gen, nullptr);
  model.eval();
  ASSERT_TRUE(model.supports_step());
  int64_t softmax_blocks = 0;
  for (int64_t i = 0; i < model.encoder().num_blocks(); ++i) {
    softmax_blocks += model.encoder().block(i).is_softmax();
  }
  ASSERT_GT(softmax_blocks, 0);
  ASSERT_LT(softmax_blocks, model.encoder().num_blocks());
  expect_greedy_generation_equals_forward(model, 42, c.dtype, c.name);
}

INSTANTIATE_TEST_SUITE_P(Stacks, HybridGreedyGeneration, ::testing::ValuesIn(hybrid_cases()),
                         [](const ::testing::TestParamInfo<HybridCase>& info) {
                           return info.param.name;
                         });

// ---------------------------------------------------------------------------------------------
// Sampled generation follows the same draws as a full-forward reference with the same seed.

class SampledGeneration : public ::testing::TestWithParam<AttentionFamily> {};

TEST_P(SampledGeneration, EqualsFullForwardDrawsFromTheSameSeed) {
  ModelOptions o =
      GetParam() == AttentionFamily::kLinear
          ? linear_options({"", lrpe_householder(backend::LrpeCore::kOrthogonal), DType::kF64})
          : softmax_options("rope");
  Generator init_gen(41);
  CausalLm model(o, init_gen, nullptr);
  model.eval();
  Generator prompt_gen(42);
  const std::vector<int64_t> prompt = random_prompt(prompt_gen);
  GenerationOptions options;
  options.tokens = kGenerated;
  options.temperature = 1.5;
  options.top_k = 12;
  options.seed = 1234;
  EXPECT_EQ(models::generate(model, prompt, options),
            sampled_by_full_forward(model, prompt, options));
}

INSTANTIATE_TEST_SUITE_P(Families, SampledGeneration,
                         ::testing::Values(AttentionFamily::kLinear, AttentionFamily::kSoftmax),
                         [](const ::testing::TestParamInfo<AttentionFamily>& info) {
                           return info.param == AttentionFamily::kLinear ? "Linear" : "Softmax";
                         });

// ---------------------------------------------------------------------------------------------
// sample_next_token.

std::vector<float> random_logits(int64_t vocab, uint64_t seed, double stddev = 1.5) {
  Generator gen(seed);
  std::vector<float> logits(vocab);
  for (auto& x : logits) x = static_cast<float>(gen.next_normal() * stddev);
  return logits;
}

/// softmax(logits / T) over the k largest logits (all when k is 0 or >= V), zero elsewhere.
std::vector<double> tempered_top_k_probabilities(const std::vector<float>& logits,
                                                 double temperature, int64_t top_k) {
  const int64_t vocab = int64_t(logits.size());
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  const int64_t keep = top_k > 0 ? std::min(top_k, vocab) : vocab;
  const double top = logits[order[0]];
  std::vector<double> p(vocab, 0.0);
  double total = 0;
  for (int64_t r = 0; r < keep; ++r) {
    p[order[r]] = std::exp((double(logits[order[r]]) - top) / temperature);
    total += p[order[r]];
  }
  for (auto& x : p) x /= total;
  return p;
}

TEST(SampleNextToken, ZeroTemperatureIsArgmaxWithLowestIdOnTies) {
  Generator gen(1);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<float> logits = random_logits(kVocab, 100 + seed);
    const int64_t expected = argmax_lowest(std::vector<double>(logits.begin(), logits.end()));
    EXPECT_EQ(models::sample_next_token(logits, 0.0, 0, gen), expected);
    EXPECT_EQ(models::sample_next_token(logits, 0.0, 7, gen), expected);
  }
  const std::vector<float> tied = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f};
  EXPECT_EQ(models::sample_next_token(tied, 0.0, 0, gen), 1);
  EXPECT_EQ(models::sample_next_token(tied, 0.0, 2, gen), 1);
  const std::vector<float> all_equal(9, -3.0f);
  EXPECT_EQ(models::sample_next_token(all_equal, 0.0, 0, gen), 0);
  const std::vector<float> negative = {-7.0f, -2.5f, -9.0f, -2.5f};
  EXPECT_EQ(models::sample_next_token(negative, 0.0, 0, gen), 1);
}

TEST(SampleNextToken, TopOneIsArgmaxAtAnyTemperature) {
  Generator gen(2);
  for (double temperature : {1e-3, 0.5, 1.0, 10.0, 1e6}) {
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const std::vector<float> logits = random_logits(kVocab, 200 + seed);
      const int64_t expected = argmax_lowest(std::vector<double>(logits.begin(), logits.end()));
      for (int draw = 0; draw < 20; ++draw) {
        ASSERT_EQ(models::sample_next_token(logits, temperature, 1, gen), expected)
            << "temperature " << temperature;
      }
    }
    const std::vector<float> tied = {3.0f, 7.0f, 7.0f, 1.0f};
    for (int draw = 0; draw < 50; ++draw) {
      ASSERT_EQ(models::sample_next_token(tied, temperature, 1, gen), 1);
    }
  }
}

TEST(SampleNextToken, RefusesANonFiniteOrNegativeTemperature) {
  Generator gen(3);
  const std::vector<float> logits = random_logits(kVocab, 400);
  for (double temperature : {std::nan(""), std::numeric_limits<double>::infinity(), -0.5}) {
    EXPECT_THROW(models::sample_next_token(logits, temperature, 0, gen), Error) << temperature;
  }
}

TEST(SampleNextToken, NeverDrawsOutsideTheTopK) {
  constexpr int64_t kTopK = 5;
  const std::vector<float> logits = random_logits(20, 300);
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  const std::set<int64_t> allowed(order.begin(), order.begin() + kTopK);
  Generator gen(3);
  std::set<int64_t> seen;
  // A high temperature makes the distribution nearly flat, so a leak past the top k would show.
  for (int draw = 0; draw < 20000; ++draw) {
    const int64_t id = models::sample_next_token(logits, 50.0, kTopK, gen);
    ASSERT_TRUE(allowed.count(id)) << "drew id " << id << " outside the top " << kTopK;
    seen.insert(id);
  }
  EXPECT_EQ(seen, allowed);  // each allowed id has probability ~0.2 per draw
}

struct FrequencyCase {
  double temperature;
  int64_t top_k;
};

std::ostream& operator<<(std::ostream& os, const FrequencyCase& c) {
  return os << "T=" << c.temperature << " k=" << c.top_k;
}

class SampleFrequencies : public ::testing::TestWithParam<FrequencyCase> {};

// n draws; every id's count must lie within 5 binomial standard deviations (+1 for ids of
// negligible probability), and Pearson's χ² over the bins with expected count >= 5 (rare ids
// pooled into one bin) must stay below the Laurent–Massart bound d + 2√(d·x) + 2x with x = 15,
// i.e. a false alarm probability of about e^−15 ≈ 3e−7.
TEST_P(SampleFrequencies, MatchTemperedSoftmaxOverTopK) {
  constexpr int64_t kDraws = 200000;
  const FrequencyCase c = GetParam();
  const std::vector<float> logits = random_logits(kVocab, 400);
  const std::vector<double> p = tempered_top_k_probabilities(logits, c.temperature, c.top_k);
  std::vector<int64_t> counts(kVocab, 0);
  Generator gen(4);
  for (int64_t draw = 0; draw < kDraws; ++draw) {
    const int64_t id = models::sample_next_token(logits, c.temperature, c.top_k, gen);
    ASSERT_GE(id, 0);
    ASSERT_LT(id, kVocab);
    ++counts[id];
  }
  double chi_square = 0;
  int64_t bins = 0;
  double pooled_expected = 0, pooled_count = 0;
  for (int64_t i = 0; i < kVocab; ++i) {
    const double expected = kDraws * p[i];
    const double sigma = std::sqrt(kDraws * p[i] * (1 - p[i]));
    EXPECT_LE(std::abs(counts[i] - expected), 5 * sigma + 1)
        << "id " << i << " p=" << p[i] << " count " << counts[i] << " expected " << expected;
    if (expected >= 5) {
      chi_square += (counts[i] - expected) * (counts[i] - expected) / expected;
      ++bins;
    } else {
      pooled_expected += expected;
      pooled_count += counts[i];
    }
  }
  if (pooled_expected >= 5) {
    chi_square +=
        (pooled_count - pooled_expected) * (pooled_count - pooled_expected) / pooled_expected;
    ++bins;
  }
  ASSERT_GE(bins, 2);
  const double dof = bins - 1, x = 15;
  EXPECT_LT(chi_square, dof + 2 * std::sqrt(dof * x) + 2 * x) << "over " << bins << " bins";
}

INSTANTIATE_TEST_SUITE_P(TemperaturesAndTopK, SampleFrequencies,
                         ::testing::Values(FrequencyCase{1.0, 0}, FrequencyCase{0.5, 0},
                                           FrequencyCase{2.5, 0}, FrequencyCase{1.0, 3},
                                           FrequencyCase{2.0, 8}, FrequencyCase{0.7, kVocab},
                                           FrequencyCase{1.0, 2 * kVocab}));

TEST(SampleNextToken, SameSeedSameDrawsDifferentSeedDifferentDraws) {
  const std::vector<float> logits = random_logits(kVocab, 500);
  auto draws = [&](uint64_t seed) {
    Generator gen(seed);
    std::vector<int64_t> ids;
    for (int i = 0; i < 200; ++i) ids.push_back(models::sample_next_token(logits, 1.0, 0, gen));
    return ids;
  };
  EXPECT_EQ(draws(11), draws(11));
  EXPECT_NE(draws(11), draws(12));
}

TEST(SampleNextToken, RejectsNegativeTemperatureTopKAndEmptyLogits) {
  const std::vector<float> logits = random_logits(kVocab, 600);
  Generator gen(6);
  EXPECT_THROW(models::sample_next_token(logits, -0.5, 0, gen), Error);
  EXPECT_THROW(models::sample_next_token(logits, -1e-300, 0, gen), Error);
  EXPECT_THROW(models::sample_next_token(logits, 1.0, -1, gen), Error);
  EXPECT_THROW(models::sample_next_token(logits, 0.0, -3, gen), Error);
  EXPECT_THROW(models::sample_next_token(std::vector<float>{}, 1.0, 0, gen), Error);
}

// ---------------------------------------------------------------------------------------------
// generate(): seeds, edges and the callback, on both decoding paths.

class GenerateApi : public ::testing::TestWithParam<AttentionFamily> {
 protected:
  CausalLm make_model() const {
    Generator init_gen(51);
    return CausalLm(
        GetParam() == AttentionFamily::kLinear
            ? linear_options({"", lrpe_householder(backend::LrpeCore::kOrthogonal), DType::kF32})
            : softmax_options("alibi"),
        init_gen, nullptr);
  }
  const std::vector<int64_t> prompt_ = {4, 8, 15, 16, 23};
};

TEST_P(GenerateApi, SameSeedSameTextDifferentSeedDifferentText) {
  const CausalLm model = make_model();
  GenerationOptions options;
  options.tokens = kGenerated;
  options.temperature = 3.0;  // flat enough that two seeds cannot plausibly agree on 24 ids
  options.seed = 7;
  const std::vector<int64_t> first = models::generate(model, prompt_, options);
  EXPECT_EQ(models::generate(model, prompt_, options), first);
  options.seed = 8;
  EXPECT_NE(models::generate(model, prompt_, options), first);
}

TEST_P(GenerateApi, EmptyPromptThrows) {
  const CausalLm model = make_model();
  EXPECT_THROW(models::generate(model, std::vector<int64_t>{}, GenerationOptions{}), Error);
}

TEST_P(GenerateApi, ZeroTokensReturnsNothingAndNegativeThrows) {
  const CausalLm model = make_model();
  GenerationOptions options;
  options.tokens = 0;
  int calls = 0;
  EXPECT_TRUE(models::generate(model, prompt_, options, [&](int64_t) { ++calls; }).empty());
  EXPECT_EQ(calls, 0);
  options.tokens = -1;
  EXPECT_THROW(models::generate(model, prompt_, options), Error);
}

TEST_P(GenerateApi, NegativeTemperatureOrTopKThrows) {
  const CausalLm model = make_model();
  GenerationOptions options;
  options.tokens = 3;
  options.temperature = -1;
  EXPECT_THROW(models::generate(model, prompt_, options), Error);
  options.temperature = 1;
  options.top_k = -2;
  EXPECT_THROW(models::generate(model, prompt_, options), Error);
}

TEST_P(GenerateApi, OnTokenSeesEveryIdInOrder) {
  const CausalLm model = make_model();
  GenerationOptions options;
  options.tokens = 17;
  options.temperature = 1.0;
  options.seed = 99;
  std::vector<int64_t> seen;
  const std::vector<int64_t> out =
      models::generate(model, prompt_, options, [&](int64_t id) { seen.push_back(id); });
  ASSERT_EQ(out.size(), 17u);
  EXPECT_EQ(seen, out);
  for (int64_t id : out) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, kVocab);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, GenerateApi,
                         ::testing::Values(AttentionFamily::kLinear, AttentionFamily::kSoftmax),
                         [](const ::testing::TestParamInfo<AttentionFamily>& info) {
                           return info.param == AttentionFamily::kLinear ? "Linear" : "Softmax";
                         });

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
