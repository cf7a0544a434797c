// Generation options against plain references: top-p (kept set and draw frequencies), CTRL's
// repetition penalty, sample seeds, and batched rows (prompts × samples) == each row alone.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/nn/position/lrpe.h"
#include "models/generation.h"
#include "models/language_models.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::AttentionFamily;
using models::CausalLm;
using models::GenerationOptions;
using models::GenerationRow;
using models::ModelOptions;

constexpr int64_t kVocab = 50;

std::vector<float> random_logits(int64_t vocab, uint64_t seed, double stddev = 1.5) {
  Generator gen(seed);
  std::vector<float> logits(vocab);
  for (auto& x : logits) x = static_cast<float>(gen.next_normal() * stddev);
  return logits;
}

/// The reference nucleus: ids sorted by logit (ties: lower id first), the top k of them (all when
/// k is 0 or >= V), their softmax(logit / T) in double, and the shortest prefix whose probability
/// reaches p. `margin` gets the smallest |cumulative − p| over the prefixes, so a caller can
/// check that the boundary is decided by more than rounding.
std::vector<int64_t> reference_nucleus(const std::vector<float>& logits, double temperature,
                                       int64_t top_k, double top_p, double* margin) {
  const int64_t vocab = int64_t(logits.size());
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  if (top_k > 0 && top_k < vocab) order.resize(top_k);
  std::vector<double> p;
  double z = 0;
  for (int64_t id : order) {
    p.push_back(std::exp((double(logits[id]) - double(logits[order[0]])) / temperature));
    z += p.back();
  }
  double cumulative = 0;
  *margin = INFINITY;
  for (size_t i = 0; i < order.size(); ++i) {
    cumulative += p[i] / z;
    *margin = std::min(*margin, std::abs(cumulative - top_p));
    if (cumulative >= top_p) {
      order.resize(i + 1);
      break;
    }
  }
  return order;
}

/// The distribution a draw must follow: the reference nucleus, renormalised; 0 elsewhere.
std::vector<double> nucleus_probabilities(const std::vector<float>& logits, double temperature,
                                          int64_t top_k, double top_p) {
  double margin = 0;
  const std::vector<int64_t> kept = reference_nucleus(logits, temperature, top_k, top_p, &margin);
  std::vector<double> p(logits.size(), 0.0);
  double z = 0;
  for (int64_t id : kept) {
    p[id] = std::exp((double(logits[id]) - double(logits[kept[0]])) / temperature);
    z += p[id];
  }
  for (double& x : p) x /= z;
  return p;
}

// ---------------------------------------------------------------------------------------------
// Top-p.

TEST(TopP, KeptSetEqualsTheReferenceNucleus) {
  int checked = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const std::vector<float> logits = random_logits(kVocab, 700 + seed);
    for (double temperature : {0.5, 1.0, 2.0}) {
      for (int64_t top_k : {int64_t{0}, int64_t{5}, int64_t{20}}) {
        for (double top_p : {0.05, 0.3, 0.6, 0.9, 0.99}) {
          double margin = 0;
          const std::vector<int64_t> expected =
              reference_nucleus(logits, temperature, top_k, top_p, &margin);
          if (margin < 1e-9) continue;  // a boundary rounding could decide either way
          const std::vector<int64_t> kept =
              models::sampling_candidates(logits, temperature, top_k, top_p);
          ASSERT_EQ(kept, expected)
              << "seed " << seed << " T=" << temperature << " k=" << top_k << " p=" << top_p;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1300);  // of 1350: almost no case skipped
}

TEST(TopP, HandExampleKeepsTheBoundaryIdAndOrdersTiesById) {
  // Probabilities 0.1, 0.4, 0.3, 0.2 (temperature 1).
  const std::vector<float> logits = {std::log(0.1f), std::log(0.4f), std::log(0.3f),
                                     std::log(0.2f)};
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 0, 0.39), (std::vector<int64_t>{1}));
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 0, 0.41), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 0, 0.65), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 0, 0.71), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 0, 0.95), (std::vector<int64_t>{1, 2, 3, 0}));
  // After top-k = 2 the set is {1, 2} with probabilities 4/7, 3/7.
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 2, 0.5), (std::vector<int64_t>{1}));
  EXPECT_EQ(models::sampling_candidates(logits, 1.0, 2, 0.6), (std::vector<int64_t>{1, 2}));
  // Three tied ids at 1/3 each and a negligible one: p = 0.5 keeps the two lowest ids.
  const std::vector<float> tied = {-30.0f, 2.0f, 2.0f, 2.0f};
  EXPECT_EQ(models::sampling_candidates(tied, 1.0, 0, 0.5), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(models::sampling_candidates(tied, 1.0, 0, 0.2), (std::vector<int64_t>{1}));
  // p = 1 is off: every id, in id order (what sampling walks without top-p).
  EXPECT_EQ(models::sampling_candidates(tied, 1.0, 0, 1.0), (std::vector<int64_t>{0, 1, 2, 3}));
  // Greedy: the argmax alone whatever p.
  EXPECT_EQ(models::sampling_candidates(tied, 0.0, 0, 0.9), (std::vector<int64_t>{1}));
}

TEST(TopP, RefusesValuesOutsideZeroToOne) {
  const std::vector<float> logits = random_logits(kVocab, 800);
  Generator gen(1);
  for (double top_p : {0.0, -0.1, 1.0000001, std::nan(""), double(INFINITY)}) {
    GenerationOptions options;
    options.top_p = top_p;
    EXPECT_THROW(models::sample_next_token(logits, options, gen), Error) << top_p;
    EXPECT_THROW(models::check_generation_options(options), Error) << top_p;
  }
}

TEST(TopP, OneDrawsExactlyWhatSamplingWithoutItDraws) {
  const std::vector<float> logits = random_logits(kVocab, 810);
  for (int64_t top_k : {int64_t{0}, int64_t{7}}) {
    Generator a(5), b(5);
    GenerationOptions options;
    options.temperature = 0.9;
    options.top_k = top_k;
    options.top_p = 1.0;
    for (int draw = 0; draw < 500; ++draw) {
      ASSERT_EQ(models::sample_next_token(logits, options, a),
                models::sample_next_token(logits, 0.9, top_k, b));
    }
  }
}

struct TopPCase {
  double temperature;
  int64_t top_k;
  double top_p;
};

std::ostream& operator<<(std::ostream& os, const TopPCase& c) {
  return os << "T=" << c.temperature << " k=" << c.top_k << " p=" << c.top_p;
}

class TopPFrequencies : public ::testing::TestWithParam<TopPCase> {};

// n draws against the reference nucleus distribution: an id outside it never appears; every
// id's count lies within 5 binomial standard deviations (+1); Pearson's χ² over the kept ids
// (expected counts >= 5; rare ones pooled) stays below the Laurent–Massart bound
// d + 2√(d·x) + 2x with x = 15 (false alarm probability about e^−15).
TEST_P(TopPFrequencies, MatchTheRenormalisedNucleus) {
  constexpr int64_t kDraws = 200000;
  const TopPCase c = GetParam();
  const std::vector<float> logits = random_logits(kVocab, 820);
  double margin = 0;
  const std::vector<int64_t> kept =
      reference_nucleus(logits, c.temperature, c.top_k, c.top_p, &margin);
  ASSERT_GT(margin, 1e-6);
  ASSERT_GE(kept.size(), 3u) << "the case should keep several ids";
  ASSERT_LT(int64_t(kept.size()), c.top_k > 0 ? c.top_k : kVocab) << "top-p should cut";
  const std::vector<double> p = nucleus_probabilities(logits, c.temperature, c.top_k, c.top_p);
  GenerationOptions options;
  options.temperature = c.temperature;
  options.top_k = c.top_k;
  options.top_p = c.top_p;
  std::vector<int64_t> counts(kVocab, 0);
  Generator gen(9);
  for (int64_t draw = 0; draw < kDraws; ++draw) {
    const int64_t id = models::sample_next_token(logits, options, gen);
    ASSERT_GT(p[id], 0) << "drew id " << id << " outside the nucleus";
    ++counts[id];
  }
  double chi_square = 0, pooled_expected = 0, pooled_count = 0;
  int64_t bins = 0;
  for (int64_t i = 0; i < kVocab; ++i) {
    const double expected = kDraws * p[i];
    const double sigma = std::sqrt(kDraws * p[i] * (1 - p[i]));
    EXPECT_LE(std::abs(counts[i] - expected), 5 * sigma + 1) << "id " << i << " p=" << p[i];
    if (p[i] == 0) continue;
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
  ASSERT_GE(bins, 3);
  const double dof = bins - 1, x = 15;
  EXPECT_LT(chi_square, dof + 2 * std::sqrt(dof * x) + 2 * x) << "over " << bins << " bins";
}

INSTANTIATE_TEST_SUITE_P(Cases, TopPFrequencies,
                         ::testing::Values(TopPCase{1.0, 0, 0.9}, TopPCase{0.7, 0, 0.6},
                                           TopPCase{2.0, 0, 0.5}, TopPCase{1.5, 20, 0.8}));

// ---------------------------------------------------------------------------------------------
// Repetition penalty.

TEST(RepetitionPenalty, HandComputedExample) {
  // ids 0, 1 and 3 are in the context (1 twice: penalised once); 2 and 4 are not.
  const std::vector<int64_t> context = {0, 1, 1, 3};
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
  models::apply_repetition_penalty(logits, context, 2.0);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -2.0f, 0.5f, 0.0f, 3.0f}));
  logits = {2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
  models::apply_repetition_penalty(logits, context, 0.5);  // < 1 favours repeats
  EXPECT_EQ(logits, (std::vector<float>{4.0f, -0.5f, 0.5f, 0.0f, 3.0f}));
  logits = {2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
  models::apply_repetition_penalty(logits, context, 1.0);
  EXPECT_EQ(logits, (std::vector<float>{2.0f, -1.0f, 0.5f, 0.0f, 3.0f}));
  EXPECT_THROW(models::apply_repetition_penalty(logits, context, 0.0), Error);
  EXPECT_THROW(models::apply_repetition_penalty(logits, std::vector<int64_t>{5}, 2.0), Error);
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
  o.init_std = 0.3;
  o.attention.chunk_size = 8;
  o.dtype = dtype;
  return o;
}

nn::LrpeOptions lrpe_householder() {
  nn::LrpeOptions l;
  l.core = backend::LrpeCore::kOrthogonal;
  l.p = backend::LrpeP::kHouseholder;
  l.learn_householder = true;
  return l;
}

enum class Stack { kLinear, kSoftmax, kHybrid };

ModelOptions stack_options(Stack stack, DType dtype) {
  ModelOptions o = tiny_causal_lm(dtype);
  if (stack == Stack::kSoftmax) {
    o.attention_family = AttentionFamily::kSoftmax;
    o.position = nn::RopePosition{};
    return o;
  }
  o.position = lrpe_householder();
  if (stack == Stack::kHybrid) {
    o.layers = 3;
    models::HybridOptions h;
    h.blocks = {1};
    h.attention_family = AttentionFamily::kSoftmax;
    h.position = nn::RopePosition{};
    o.hybrid = h;
  }
  return o;
}

/// Last-position logits of a full forward pass over `sequence` → [V] as floats.
std::vector<float> last_logits(const CausalLm& model, const std::vector<int64_t>& sequence) {
  const int64_t n = int64_t(sequence.size());
  const Tensor ids =
      tensor_from(std::vector<double>(sequence.begin(), sequence.end()), {1, n}, DType::kI64);
  const std::vector<double> row =
      model.forward(ids).data().slice(1, n - 1, n).reshape({kVocab}).to_double_vector();
  return std::vector<float>(row.begin(), row.end());
}

TEST(RepetitionPenalty, GreedyGenerationEqualsArgmaxOfPenalisedFullForwardLogits) {
  for (Stack stack : {Stack::kLinear, Stack::kSoftmax}) {
    Generator init_gen(61);
    CausalLm model(stack_options(stack, DType::kF64), init_gen, nullptr);
    model.eval();
    const std::vector<int64_t> prompt = {3, 9, 3, 27, 41};
    GenerationOptions options;
    options.tokens = 20;
    options.temperature = 0;
    options.repetition_penalty = 3.0;
    const std::vector<int64_t> generated = models::generate(model, prompt, options);
    // The reference: every id seen so far (prompt and generated), penalised by hand.
    std::vector<int64_t> sequence = prompt;
    std::vector<int64_t> expected;
    for (int64_t t = 0; t < options.tokens; ++t) {
      std::vector<float> logits = last_logits(model, sequence);
      std::vector<bool> seen(kVocab, false);
      for (int64_t id : sequence) seen[id] = true;
      for (int64_t id = 0; id < kVocab; ++id) {
        if (!seen[id]) continue;
        logits[id] = logits[id] > 0 ? float(logits[id] / 3.0) : float(logits[id] * 3.0);
      }
      const int64_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
      expected.push_back(best);
      sequence.push_back(best);
    }
    EXPECT_EQ(generated, expected);
    // The penalty changed the greedy text (else this test would not see it).
    options.repetition_penalty = 1.0;
    EXPECT_NE(models::generate(model, prompt, options), generated);
  }
}

// ---------------------------------------------------------------------------------------------
// Several rows: prompts × samples.

TEST(SampleSeed, SampleZeroIsTheSeedOthersDiffer) {
  EXPECT_EQ(models::sample_seed(42, 0), 42u);
  EXPECT_NE(models::sample_seed(42, 1), 42u);
  EXPECT_NE(models::sample_seed(42, 1), models::sample_seed(42, 2));
  EXPECT_NE(models::sample_seed(42, 1), models::sample_seed(43, 1));
  EXPECT_EQ(models::sample_seed(42, 3), models::sample_seed(42, 3));
}

struct BatchCase {
  std::string name;
  Stack stack;
  DType dtype;
};

std::ostream& operator<<(std::ostream& os, const BatchCase& c) {
  return os << c.name;
}

class BatchedGeneration : public ::testing::TestWithParam<BatchCase> {
 protected:
  // Prompts of lengths 5, 3, 5, 7, 3, each with three samples.
  std::vector<GenerationRow> rows(uint64_t seed) const {
    const std::vector<std::vector<int64_t>> prompts = {
        {4, 8, 15, 16, 23}, {42, 1, 7}, {9, 9, 9, 2, 30}, {5, 6, 7, 8, 9, 10, 11}, {0, 49, 25}};
    std::vector<GenerationRow> out;
    for (const auto& prompt : prompts) {
      for (int64_t sample = 0; sample < 3; ++sample) {
        out.push_back({prompt, models::sample_seed(seed, sample)});
      }
    }
    return out;
  }
};

TEST_P(BatchedGeneration, EveryRowEqualsTheRowAlone) {
  const BatchCase& c = GetParam();
  Generator init_gen(71);
  CausalLm model(stack_options(c.stack, c.dtype), init_gen, nullptr);
  model.eval();
  ASSERT_EQ(model.supports_step(), c.stack != Stack::kSoftmax);
  GenerationOptions options;
  options.tokens = 16;
  options.temperature = 1.3;
  options.top_k = 30;
  options.top_p = 0.9;
  options.repetition_penalty = 1.2;
  const std::vector<GenerationRow> batch = rows(77);
  const std::vector<std::vector<int64_t>> together = models::generate_batch(model, batch, options);
  ASSERT_EQ(together.size(), batch.size());
  std::vector<std::vector<int64_t>> distinct;
  for (size_t r = 0; r < batch.size(); ++r) {
    GenerationOptions alone = options;
    alone.seed = batch[r].seed;
    EXPECT_EQ(together[r], models::generate(model, batch[r].prompt, alone)) << "row " << r;
    EXPECT_EQ(together[r].size(), 16u);
    if (std::find(distinct.begin(), distinct.end(), together[r]) == distinct.end()) {
      distinct.push_back(together[r]);
    }
  }
  // The samples of a prompt differ (different seeds), so the rows are not one row repeated.
  EXPECT_EQ(distinct.size(), batch.size());
}

TEST_P(BatchedGeneration, ARowEndedByTheCallbackLeavesTheOthersUnchanged) {
  const BatchCase& c = GetParam();
  Generator init_gen(72);
  CausalLm model(stack_options(c.stack, c.dtype), init_gen, nullptr);
  model.eval();
  GenerationOptions options;
  options.tokens = 12;
  options.temperature = 1.0;
  const std::vector<GenerationRow> batch = rows(5);
  const std::vector<std::vector<int64_t>> full = models::generate_batch(model, batch, options);
  // Row 1 ends after its 4th id, row 6 after its 1st; the callback sees each row's ids in order.
  std::vector<std::vector<int64_t>> seen(batch.size());
  const std::vector<std::vector<int64_t>> cut =
      models::generate_batch(model, batch, options, [&](int64_t row, int64_t id) {
        seen[row].push_back(id);
        return !((row == 1 && seen[row].size() == 4) || (row == 6 && seen[row].size() == 1));
      });
  for (size_t r = 0; r < batch.size(); ++r) {
    const size_t length = r == 1 ? 4 : r == 6 ? 1 : 12;
    EXPECT_EQ(cut[r], std::vector<int64_t>(full[r].begin(), full[r].begin() + length))
        << "row " << r;
    EXPECT_EQ(seen[r], cut[r]) << "row " << r;
  }
}

TEST_P(BatchedGeneration, GreedyRowsEqualTheRowsAlone) {
  const BatchCase& c = GetParam();
  Generator init_gen(73);
  CausalLm model(stack_options(c.stack, c.dtype), init_gen, nullptr);
  model.eval();
  GenerationOptions options;
  options.tokens = 10;
  options.temperature = 0;
  const std::vector<GenerationRow> batch = rows(0);
  const std::vector<std::vector<int64_t>> together = models::generate_batch(model, batch, options);
  for (size_t r = 0; r < batch.size(); ++r) {
    EXPECT_EQ(together[r], models::generate(model, batch[r].prompt, options)) << "row " << r;
  }
}

// Prompts of different lengths share one batch: the rows run in lockstep from position 0, so
// the model is called once per position of the longest row (recurrent steps) or once per length
// from the shortest prompt's (softmax forward passes), not once per length group.
TEST_P(BatchedGeneration, PromptsOfDifferentLengthsDecodeAsOneBatch) {
  const BatchCase& c = GetParam();
  Generator init_gen(75);
  CausalLm model(stack_options(c.stack, c.dtype), init_gen, nullptr);
  model.eval();
  GenerationOptions options;
  options.tokens = 16;
  const std::vector<GenerationRow> batch = rows(9);  // prompts of 3 to 7 ids, 15 rows
  models::GenerationStats stats;
  const std::vector<std::vector<int64_t>> together =
      models::generate_batch(model, batch, options, {}, &stats);
  EXPECT_EQ(stats.batches, 1);
  EXPECT_EQ(stats.rows_per_batch, 15);
  // The 7-id prompt samples at positions 6 … 21; the 3-id prompts' sequences are 3 ids long at
  // the first pass and 22 at the last.
  EXPECT_EQ(stats.model_calls, c.stack == Stack::kSoftmax ? 22 - 3 + 1 : 7 + 16 - 1);
  for (size_t r = 0; r < batch.size(); ++r) {
    GenerationOptions alone = options;
    alone.seed = batch[r].seed;
    EXPECT_EQ(together[r], models::generate(model, batch[r].prompt, alone)) << "row " << r;
  }
}

// More rows than a batch holds: batches of kMaxRowsPerBatch rows, shortest prompts first; every
// row still equals the row alone, in the caller's order.
TEST_P(BatchedGeneration, MoreRowsThanABatchHoldsSplitIntoFullBatches) {
  const BatchCase& c = GetParam();
  Generator init_gen(76);
  CausalLm model(stack_options(c.stack, c.dtype), init_gen, nullptr);
  model.eval();
  GenerationOptions options;
  options.tokens = 3;
  options.temperature = 0.8;
  Generator prompt_gen(77);
  std::vector<GenerationRow> batch;
  const int64_t count = models::kMaxRowsPerBatch + 6;
  for (int64_t r = 0; r < count; ++r) {
    std::vector<int64_t> prompt(static_cast<size_t>(1 + prompt_gen.next_u64() % 9));
    for (int64_t& id : prompt) id = static_cast<int64_t>(prompt_gen.next_u64() % 50);
    batch.push_back({prompt, static_cast<uint64_t>(1000 + r)});
  }
  models::GenerationStats stats;
  const std::vector<std::vector<int64_t>> together =
      models::generate_batch(model, batch, options, {}, &stats);
  EXPECT_EQ(stats.batches, 2);
  EXPECT_EQ(stats.rows_per_batch, models::kMaxRowsPerBatch);
  ASSERT_EQ(together.size(), batch.size());
  for (size_t r = 0; r < batch.size(); ++r) {
    GenerationOptions alone = options;
    alone.seed = batch[r].seed;
    EXPECT_EQ(together[r], models::generate(model, batch[r].prompt, alone)) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stacks, BatchedGeneration,
    ::testing::Values(BatchCase{"LinearLrpeF32", Stack::kLinear, DType::kF32},
                      BatchCase{"LinearLrpeF64", Stack::kLinear, DType::kF64},
                      BatchCase{"SoftmaxRopeF32", Stack::kSoftmax, DType::kF32},
                      BatchCase{"HybridF32", Stack::kHybrid, DType::kF32}),
    [](const ::testing::TestParamInfo<BatchCase>& info) { return info.param.name; });

TEST(BatchedGeneration, RefusesAnEmptyPromptAndBadOptions) {
  Generator init_gen(74);
  CausalLm model(stack_options(Stack::kLinear, DType::kF32), init_gen, nullptr);
  model.eval();
  std::vector<GenerationRow> batch = {{{1, 2}, 0}, {{}, 1}};
  EXPECT_THROW(models::generate_batch(model, batch, GenerationOptions{}), Error);
  batch[1].prompt = {3};
  GenerationOptions options;
  options.repetition_penalty = 0;
  EXPECT_THROW(models::generate_batch(model, batch, options), Error);
  options.repetition_penalty = 1;
  options.tokens = 0;
  const auto none = models::generate_batch(model, batch, options);
  ASSERT_EQ(none.size(), 2u);
  EXPECT_TRUE(none[0].empty() && none[1].empty());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
