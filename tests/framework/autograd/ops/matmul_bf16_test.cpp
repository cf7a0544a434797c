// bf16 compute of the matmul and linear ops: forward and gradients against f64 products of the
// bf16-rounded operands, f32/f64 untouched, the portable path, bf16 saved tensors.
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/autograd/precision.h"
#include "framework/tensor/random.h"
#include "framework/tensor/storage.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using OpFn = std::function<Variable(const std::vector<Variable>&)>;

// Outputs of one forward + backward.
struct Outputs {
  Tensor out;
  std::vector<Tensor> grads;
};

Outputs forward_backward(const OpFn& f, const std::vector<Tensor>& inputs, const Tensor& seed) {
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t, true);
  const Variable out = f(vars);
  out.backward(seed);
  Outputs result{out.data(), {}};
  for (const Variable& v : vars) result.grads.push_back(v.grad());
  return result;
}

// t rounded to bf16 (round-to-nearest-even, the framework's cast), held exactly in f64.
Tensor bf16_rounded_f64(const Tensor& t) {
  return t.to(DType::kBF16).to(DType::kF64);
}

Tensor abs_f64(const Tensor& t) {
  Tensor out = t.to(DType::kF64).clone();
  double* p = out.data<double>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = std::fabs(p[i]);
  return out;
}

std::vector<double> values_f64(const Tensor& t) {
  const Tensor dense = t.to(DType::kF64).contiguous();
  return std::vector<double>(dense.data<double>(), dense.data<double>() + dense.numel());
}

// Worst-case error of f32 accumulation: L terms that are exact in f32 (a product of two bf16
// values has at most 16 significant bits, so it is exact in f32's 24), summed in any order
// with every partial sum rounded to f32 (unit roundoff u = 2^-24), are off by at most
// γ_L·Σ|terms| with γ_L = L·u / (1 − L·u) (Higham, Accuracy and Stability, §4.2; γ_{L-1}
// suffices, γ_L covers an added bias term). oneDNN's kernels flush denormals, which can drop
// up to 2^-126 per term more.
double accumulation_bound(double terms, double magnitude) {
  const double u = std::ldexp(1.0, -24);
  return terms * u / (1.0 - terms * u) * magnitude + terms * std::ldexp(1.0, -126);
}

// Every |actual − reference| within the accumulation bound of its magnitude Σ|terms|.
::testing::AssertionResult within_f32_accumulation(const Tensor& actual, const Tensor& reference,
                                                   const Tensor& magnitude, double terms) {
  if (actual.shape() != reference.shape()) {
    return ::testing::AssertionFailure()
           << "shape " << shape_str(actual.shape()) << " vs " << shape_str(reference.shape());
  }
  if (actual.dtype() != DType::kF32) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype());
  }
  const std::vector<double> a = values_f64(actual), r = values_f64(reference),
                            m = values_f64(magnitude);
  for (size_t i = 0; i < a.size(); ++i) {
    const double bound = accumulation_bound(terms, m[i]);
    if (!(std::fabs(a[i] - r[i]) <= bound)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs reference " << r[i] << " (bound " << bound
             << ", " << terms << " terms)";
    }
  }
  return ::testing::AssertionSuccess();
}

// True when some element is farther from the exact (unrounded) result than f32 accumulation
// alone could explain: the operands really were rounded to bf16.
bool shows_bf16_rounding(const Tensor& actual, const Tensor& exact, const Tensor& magnitude,
                         double terms) {
  const std::vector<double> a = values_f64(actual), r = values_f64(exact),
                            m = values_f64(magnitude);
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::fabs(a[i] - r[i]) > 16 * accumulation_bound(terms, m[i])) return true;
  }
  return false;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor da = a.contiguous(), db = b.contiguous();
  return std::memcmp(da.raw_data(), db.raw_data(), da.nbytes()) == 0;
}

// A random operand of `shape` in [-1, 1); when `transposed`, stored as [..., C, R] and viewed
// transposed (the op sees a non-contiguous input).
Tensor make_input(const Shape& shape, bool transposed, Generator& gen) {
  if (!transposed || shape.size() < 2) return rand(shape, gen, -1, 1, DType::kF32);
  Shape stored = shape;
  std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
  return rand(stored, gen, -1, 1, DType::kF32).transpose(-2, -1);
}

struct Bf16Case {
  std::string name;
  std::vector<Shape> inputs;  // as the op sees them (transposed ones are strided views)
  std::vector<bool> transposed;
  OpFn op;
  double k;  // the contraction length (a bias, the third input, adds one more term)
};

std::vector<Bf16Case> bf16_cases() {
  auto mm = [](bool ta, bool tb) {
    return [ta, tb](const std::vector<Variable>& v) { return matmul(v[0], v[1], ta, tb); };
  };
  auto lin = [](const std::vector<Variable>& v) {
    return linear(v[0], v[1], v.size() > 2 ? v[2] : Variable());
  };
  return {
      {"matrix", {{5, 37}, {37, 6}}, {false, false}, mm(false, false), 37},
      {"transpose_a", {{37, 5}, {37, 6}}, {false, false}, mm(true, false), 37},
      {"transpose_b", {{5, 37}, {6, 37}}, {false, false}, mm(false, true), 37},
      {"strided_views", {{5, 37}, {37, 6}}, {true, true}, mm(false, false), 37},
      {"vector_matrix", {{37}, {37, 6}}, {false, false}, mm(false, false), 37},
      {"broadcast_batch", {{2, 1, 4, 33}, {3, 33, 5}}, {false, false}, mm(false, false), 33},
      {"batched_times_matrix", {{2, 3, 7, 33}, {33, 5}}, {false, false}, mm(false, false), 33},
      {"matrix_times_batched", {{7, 33}, {2, 33, 5}}, {false, false}, mm(false, false), 33},
      {"batched_transposes", {{2, 33, 4}, {1, 5, 33}}, {false, false}, mm(true, true), 33},
      {"linear", {{3, 4, 40}, {7, 40}}, {false, false}, lin, 40},
      {"linear_bias", {{3, 4, 40}, {7, 40}, {7}}, {false, false, false}, lin, 40},
      // x [B, T, In] read as a permuted view: rows that do not merge into one matrix.
      {"linear_bias_permuted_x",
       {{4, 3, 40}, {7, 40}, {7}},
       {false, false, false},
       [](const std::vector<Variable>& v) {
         return linear(permute(v[0], {1, 0, 2}), v[1], v[2]);
       },
       40},
  };
}

// Native: oneDNN's bf16 kernels (where the CPU has them); Portable: the forced fallback
// (bf16-rounded values multiplied in f32).
class MatmulBf16 : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { force_bf16_matmul_emulation(GetParam()); }
  void TearDown() override { force_bf16_matmul_emulation(false); }
};

TEST_P(MatmulBf16, ForwardAndGradientsMatchF64ProductsOfTheRoundedOperands) {
  for (const Bf16Case& c : bf16_cases()) {
    SCOPED_TRACE(c.name);
    Generator gen(7);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      inputs.push_back(make_input(c.inputs[i], c.transposed[i], gen));
    }
    const bool has_bias = c.inputs.size() == 3;
    const double forward_terms = c.k + (has_bias ? 1 : 0);
    // The output shape, from an f32 forward without a graph.
    Tensor seed;
    {
      NoGradGuard no_grad;
      std::vector<Variable> vars(inputs.begin(), inputs.end());
      seed = randn(c.op(vars).shape(), gen, 0.0, 1.0, DType::kF32);
    }

    Outputs actual;
    {
      const MatmulPrecisionGuard bf16(MatmulPrecision::kBF16);
      actual = forward_backward(c.op, inputs, seed);
    }

    // Reference: the same op in f64 on the rounded operands and the rounded incoming gradient
    // (the bias is added, not multiplied: it stays f32). Magnitudes Σ|terms|: the same bilinear
    // op on absolute values.
    std::vector<Tensor> rounded, magnitudes;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const bool is_bias = has_bias && i == 2;
      rounded.push_back(is_bias ? inputs[i].to(DType::kF64) : bf16_rounded_f64(inputs[i]));
      magnitudes.push_back(abs_f64(rounded.back()));
    }
    const Outputs reference = forward_backward(c.op, rounded, bf16_rounded_f64(seed));
    const Outputs magnitude = forward_backward(c.op, magnitudes, abs_f64(bf16_rounded_f64(seed)));

    EXPECT_TRUE(within_f32_accumulation(actual.out, reference.out, magnitude.out, forward_terms));
    const double out_numel = static_cast<double>(actual.out.numel());
    for (size_t i = 0; i < inputs.size(); ++i) {
      SCOPED_TRACE("gradient " + std::to_string(i));
      if (has_bias && i == 2) {
        // db = Σ_rows g over the f32 (unrounded) gradient.
        const Outputs exact = forward_backward(c.op, rounded, seed.to(DType::kF64));
        const Outputs exact_magnitude = forward_backward(c.op, magnitudes, abs_f64(seed));
        EXPECT_TRUE(within_f32_accumulation(actual.grads[i], exact.grads[i],
                                            exact_magnitude.grads[i],
                                            out_numel / static_cast<double>(actual.out.size(-1))));
        continue;
      }
      // Each product term a·b·g belongs to exactly one element of each operand, so an operand
      // element's gradient sums numel(out)·K / numel(operand) terms (batch sums included).
      const double terms = out_numel * c.k / static_cast<double>(inputs[i].numel());
      EXPECT_TRUE(
          within_f32_accumulation(actual.grads[i], reference.grads[i], magnitude.grads[i], terms));
    }

    // bf16 really ran: the result is off the exact product of the unrounded operands by far
    // more than f32 accumulation explains.
    std::vector<Tensor> exact_inputs;
    for (const Tensor& t : inputs) exact_inputs.push_back(t.to(DType::kF64));
    const Outputs exact = forward_backward(c.op, exact_inputs, seed.to(DType::kF64));
    EXPECT_TRUE(shows_bf16_rounding(actual.out, exact.out, magnitude.out, forward_terms));
    EXPECT_TRUE(shows_bf16_rounding(actual.grads[0], exact.grads[0], magnitude.grads[0],
                                    out_numel * c.k / static_cast<double>(inputs[0].numel())));
  }
}

TEST_P(MatmulBf16, InferenceWithoutAGraphAlsoComputesInBf16) {
  Generator gen(3);
  const Tensor x = rand({6, 48}, gen, -1, 1, DType::kF32);
  const Tensor w = rand({5, 48}, gen, -1, 1, DType::kF32);
  const Tensor bias = rand({5}, gen, -1, 1, DType::kF32);
  Tensor actual;
  {
    const MatmulPrecisionGuard bf16(MatmulPrecision::kBF16);
    NoGradGuard no_grad;
    actual = linear(Variable(x), Variable(w), Variable(bias)).data();
  }
  NoGradGuard no_grad;
  const Tensor reference = linear(Variable(bf16_rounded_f64(x)), Variable(bf16_rounded_f64(w)),
                                  Variable(bias.to(DType::kF64)))
                               .data();
  const Tensor magnitude = linear(Variable(abs_f64(bf16_rounded_f64(x))),
                                  Variable(abs_f64(bf16_rounded_f64(w))), Variable(abs_f64(bias)))
                               .data();
  EXPECT_TRUE(within_f32_accumulation(actual, reference, magnitude, 49));
  const Tensor exact = linear(Variable(x.to(DType::kF64)), Variable(w.to(DType::kF64)),
                              Variable(bias.to(DType::kF64)))
                           .data();
  EXPECT_TRUE(shows_bf16_rounding(actual, exact, magnitude, 49));
}

INSTANTIATE_TEST_SUITE_P(Paths, MatmulBf16, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Portable" : "Native";
                         });

// Forward and gradients of a batched matmul and a linear with bias, f32 or f64.
std::vector<Tensor> products(DType dtype) {
  Generator gen(11);
  const Tensor a = rand({2, 5, 24}, gen, -1, 1, DType::kF32).to(dtype);
  const Tensor b = rand({24, 6}, gen, -1, 1, DType::kF32).to(dtype);
  const Tensor w = rand({6, 24}, gen, -1, 1, DType::kF32).to(dtype);
  const Tensor bias = rand({6}, gen, -1, 1, DType::kF32).to(dtype);
  const Outputs mm =
      forward_backward([](const std::vector<Variable>& v) { return matmul(v[0], v[1]); }, {a, b},
                       randn({2, 5, 6}, gen, 0.0, 1.0, dtype));
  const Outputs lin =
      forward_backward([](const std::vector<Variable>& v) { return linear(v[0], v[1], v[2]); },
                       {a, w, bias}, randn({2, 5, 6}, gen, 0.0, 1.0, dtype));
  std::vector<Tensor> all{mm.out, lin.out};
  all.insert(all.end(), mm.grads.begin(), mm.grads.end());
  all.insert(all.end(), lin.grads.begin(), lin.grads.end());
  return all;
}

TEST(MatmulPrecision, F32IsBitIdenticalBeforeDuringAndAfterBf16) {
  ASSERT_EQ(matmul_precision(), MatmulPrecision::kF32);
  const std::vector<Tensor> before = products(DType::kF32);
  std::vector<Tensor> bf16, nested_f32;
  {
    const MatmulPrecisionGuard outer(MatmulPrecision::kBF16);
    bf16 = products(DType::kF32);
    const MatmulPrecisionGuard inner(MatmulPrecision::kF32);
    nested_f32 = products(DType::kF32);
  }
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kF32);
  const std::vector<Tensor> after = products(DType::kF32);
  bool bf16_differs = false;
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(same_bytes(before[i], after[i])) << "tensor " << i;
    EXPECT_TRUE(same_bytes(before[i], nested_f32[i])) << "tensor " << i;
    bf16_differs = bf16_differs || !same_bytes(before[i], bf16[i]);
  }
  EXPECT_TRUE(bf16_differs);
}

TEST(MatmulPrecision, F64IgnoresTheSetting) {
  const std::vector<Tensor> plain = products(DType::kF64);
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBF16);
  const std::vector<Tensor> under_bf16 = products(DType::kF64);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(under_bf16[i].dtype(), DType::kF64);
    EXPECT_TRUE(same_bytes(plain[i], under_bf16[i])) << "tensor " << i;
  }
}

TEST(MatmulPrecision, GuardsNestAndRestore) {
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kF32);
  {
    const MatmulPrecisionGuard a(MatmulPrecision::kBF16);
    EXPECT_EQ(matmul_precision(), MatmulPrecision::kBF16);
    {
      const MatmulPrecisionGuard b(MatmulPrecision::kF32);
      EXPECT_EQ(matmul_precision(), MatmulPrecision::kF32);
    }
    EXPECT_EQ(matmul_precision(), MatmulPrecision::kBF16);
  }
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kF32);
  EXPECT_STREQ(matmul_precision_name(MatmulPrecision::kBF16), "bf16");
  EXPECT_STREQ(matmul_precision_name(MatmulPrecision::kF32), "f32");
}

std::vector<std::string> g_warnings;
void record_warning(const std::string& message) {
  g_warnings.push_back(message);
}

TEST(MatmulPrecision, PortablePathWarnsOnceAndSavesRoundedF32) {
  g_warnings.clear();
  set_precision_warning_handler(&record_warning);
  force_bf16_matmul_emulation(true);
  EXPECT_FALSE(bf16_matmul_native());
  Generator gen(5);
  const Tensor x = rand({4, 16}, gen, -1, 1, DType::kF32);
  const Tensor operand = round_to_bf16_operand(x);
  EXPECT_EQ(operand.dtype(), DType::kF32);
  EXPECT_TRUE(same_bytes(operand, x.to(DType::kBF16).to(DType::kF32)));
  {
    const MatmulPrecisionGuard bf16(MatmulPrecision::kBF16);
    for (int i = 0; i < 3; ++i) {
      forward_backward([](const std::vector<Variable>& v) { return linear(v[0], v[1]); }, {x, x},
                       ones({4, 4}, DType::kF32));
    }
  }
  force_bf16_matmul_emulation(false);
  set_precision_warning_handler(nullptr);
  ASSERT_EQ(g_warnings.size(), 1u);
  EXPECT_NE(g_warnings[0].find("no bf16 kernel"), std::string::npos) << g_warnings[0];
}

// Saved tensors are the rounded copies: after the forward, the graph holds exactly the output
// and one copy of each operand (the f32 originals are the caller's), 2 bytes per element where
// oneDNN has bf16 kernels and 4 (rounded f32) on the portable path.
TEST(MatmulPrecision, SavesBf16CopiesForBackward) {
  const int64_t copy_bytes = bf16_matmul_native() ? 2 : 4;
  Generator gen(9);
  const Variable a(rand({64, 96}, gen, -1, 1, DType::kF32), true);
  const Variable b(rand({96, 32}, gen, -1, 1, DType::kF32), true);
  const MatmulPrecisionGuard bf16(MatmulPrecision::kBF16);
  const int64_t before = storage_stats().live_bytes;
  const Variable c = matmul(a, b);
  const int64_t held = storage_stats().live_bytes - before;
  EXPECT_EQ(held, (64 * 32) * 4 + (64 * 96 + 96 * 32) * copy_bytes);
  c.backward(ones({64, 32}, DType::kF32));
  EXPECT_EQ(a.grad().dtype(), DType::kF32);
  EXPECT_EQ(b.grad().dtype(), DType::kF32);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
