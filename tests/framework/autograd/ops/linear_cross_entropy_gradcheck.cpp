// Fused linear + cross-entropy op: hidden, weight and bias gradients against finite differences.
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/linear_cross_entropy.h"
#include "framework/tensor/random.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::gradcheck;

struct GradcheckCase {
  std::string name;
  Shape lead;  // hidden: lead + [E]; targets: lead
  int64_t embed;
  int64_t vocab;
  bool bias;
  double smoothing;
  Reduction reduction;
  std::vector<int64_t> ignored_rows;
};

void PrintTo(const GradcheckCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<GradcheckCase> gradcheck_cases() {
  return {
      {"rows_bias_mean", {7}, 4, 6, true, 0.0, Reduction::kMean, {}},
      {"batch_no_bias_sum", {2, 3}, 4, 5, false, 0.0, Reduction::kSum, {}},
      {"ignored_rows_smoothing", {3, 4}, 3, 6, true, 0.2, Reduction::kMean, {1, 6, 7}},
      {"ignored_rows_sum", {3, 4}, 3, 6, true, 0.1, Reduction::kSum, {0, 11}},
      // More rows than the default tile (256): two tiles after dropping the ignored rows.
      {"two_tiles", {300}, 3, 5, true, 0.1, Reduction::kMean, {10, 200}},
  };
}

class LinearCrossEntropyGradcheck : public ::testing::TestWithParam<GradcheckCase> {};

TEST_P(LinearCrossEntropyGradcheck, MatchesFiniteDifferences) {
  const GradcheckCase& c = GetParam();
  Generator gen(21);
  Shape hidden_shape = c.lead;
  hidden_shape.push_back(c.embed);
  std::vector<Tensor> inputs = {randn(hidden_shape, gen, 0.0, 1.0, DType::kF64),
                                randn({c.vocab, c.embed}, gen, 0.0, 1.0, DType::kF64)};
  if (c.bias) inputs.push_back(randn({c.vocab}, gen, 0.0, 1.0, DType::kF64));
  Tensor targets = randint(c.lead, gen, 0, c.vocab, DType::kI64);
  for (int64_t r : c.ignored_rows) targets.view({targets.numel()}).set({r}, -100);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Variable>& in) {
        return linear_cross_entropy(in[0], in[1], c.bias ? in[2] : Variable(), targets, -100,
                                    c.smoothing, c.reduction);
      },
      inputs));
}

INSTANTIATE_TEST_SUITE_P(Cases, LinearCrossEntropyGradcheck, ::testing::ValuesIn(gradcheck_cases()),
                         [](const ::testing::TestParamInfo<GradcheckCase>& info) {
                           return info.param.name;
                         });

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
