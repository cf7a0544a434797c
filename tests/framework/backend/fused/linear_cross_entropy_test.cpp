// Fused linear + cross-entropy kernel vs the composed kernels (linear, cross-entropy forward and
// backward, the two gradient products): tiling, ignored rows, bf16 rounding, errors.
#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/linear_cross_entropy.h"
#include "framework/backend/primitives/cross_entropy.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/matmul.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using backend::Reduction;
using testing::allclose;

struct Grads {
  Tensor loss, hidden, weight, bias;
};

// How the composed reference forms the operand of the gradient products.
enum class DzRounding {
  kNone,       // dz as computed
  kBf16,       // dz cast to bf16 (bf16 operands)
  kBf16AsF32,  // dz rounded to bf16 and held in f32 (the portable path)
};

// The unfused computation: [R, V] logits by backend::linear, cross_entropy_forward, then
// cross_entropy_backward for an incoming gradient of 1 and the products the matmul backward
// forms (dhidden = dz·W, dW = dzᵀ·hidden; dbias = Σ_r dz from the unrounded dz).
Grads composed(const Tensor& hidden, const Tensor& weight, const Tensor& bias,
               const Tensor& targets, const backend::CrossEntropyOptions& options,
               DzRounding rounding) {
  const int64_t rows = targets.numel();
  const Tensor h = hidden.reshape({rows, hidden.size(-1)});
  const Tensor t = targets.reshape({rows});
  const Tensor logits = backend::linear(h, weight, bias);
  const backend::CrossEntropyForward fwd = backend::cross_entropy_forward(logits, t, options);
  const Tensor dz = backend::cross_entropy_backward(scalar_tensor(1.0, logits.dtype()), logits, t,
                                                    fwd.logsumexp, fwd.valid_rows, options);
  Tensor dz_in = dz;
  if (rounding == DzRounding::kBf16) dz_in = dz.to(DType::kBF16);
  if (rounding == DzRounding::kBf16AsF32) dz_in = dz.to(DType::kBF16).to(DType::kF32);
  Grads g;
  g.loss = fwd.loss;
  g.hidden = backend::matmul(dz_in, weight).reshape(hidden.shape());
  g.weight = backend::matmul(dz_in, h, /*transpose_a=*/true);
  if (bias.defined()) g.bias = backend::reduce_sum(dz, {0}, /*keepdim=*/false);
  return g;
}

// Σ|terms| of each product element, in f64: bounds any rounding of any summation order.
Tensor abs_f64(const Tensor& t) {
  return backend::unary(backend::UnaryOp::kAbs, t.to(DType::kF64));
}

// Every |actual − expected| <= tol·magnitude + atol.
::testing::AssertionResult within(const Tensor& actual, const Tensor& expected,
                                  const Tensor& magnitude, double tol, double atol = 1e-30) {
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure()
           << dtype_name(actual.dtype()) << shape_str(actual.shape()) << " vs "
           << dtype_name(expected.dtype()) << shape_str(expected.shape());
  }
  const std::vector<double> a = actual.to_double_vector(), e = expected.to_double_vector(),
                            m = magnitude.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    const double bound = tol * m[i] + atol;
    if (!(std::fabs(a[i] - e[i]) <= bound)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << e[i] << " (bound " << bound << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

struct Magnitudes {
  Tensor hidden, weight, bias;
};

// |dz|·|W|, |dz|ᵀ·|h| and Σ_r |dz| from the reference dz (recomputed in f64).
Magnitudes magnitudes(const Tensor& hidden, const Tensor& weight, const Tensor& bias,
                      const Tensor& targets, const backend::CrossEntropyOptions& options) {
  const int64_t rows = targets.numel();
  const Tensor h = abs_f64(hidden.reshape({rows, hidden.size(-1)}));
  const Tensor w = abs_f64(weight);
  const Tensor logits =
      backend::linear(hidden.reshape({rows, hidden.size(-1)}).to(DType::kF64),
                      weight.to(DType::kF64), bias.defined() ? bias.to(DType::kF64) : Tensor());
  const backend::CrossEntropyForward fwd =
      backend::cross_entropy_forward(logits, targets.reshape({rows}), options);
  const Tensor dz = abs_f64(backend::cross_entropy_backward(scalar_tensor(1.0, DType::kF64), logits,
                                                            targets.reshape({rows}), fwd.logsumexp,
                                                            fwd.valid_rows, options));
  return {backend::matmul(dz, w).reshape(hidden.shape()), backend::matmul(dz, h, true),
          backend::reduce_sum(dz, {0}, false)};
}

struct FusedCase {
  std::string name;
  Shape lead;  // hidden is lead + [E], targets lead
  int64_t embed;
  int64_t vocab;
  int64_t tile_rows;  // 0 = default
  bool bias;
  double smoothing;
  Reduction reduction;
  std::vector<int64_t> ignored_rows;  // flat row numbers whose target is ignore_index
  int64_t ignore_index = -100;
  DType target_dtype = DType::kI64;
};

void PrintTo(const FusedCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<FusedCase> fused_cases() {
  const Reduction mean = Reduction::kMean, sum = Reduction::kSum;
  return {
      // R < tile (one partial tile of the default size).
      {"fewer_rows_than_tile", {5}, 6, 9, 0, false, 0.0, mean, {}},
      // R not a multiple of the tile: 5 tiles, the last of 5 rows.
      {"tile_remainder", {37}, 6, 11, 8, true, 0.0, mean, {}},
      {"exact_tiles", {4, 8}, 5, 13, 8, false, 0.0, sum, {}, -100, DType::kI32},
      {"one_row_tiles", {2, 3}, 4, 7, 1, true, 0.0, mean, {1}},
      // Ignored rows are gathered out before tiling.
      {"ignored_rows_smoothing", {3, 7}, 6, 10, 4, true, 0.1, mean, {0, 5, 6, 20}},
      {"ignored_rows_sum", {3, 7}, 6, 10, 4, false, 0.2, sum, {2, 3, 19}, -100, DType::kI32},
      // ignore_index inside [0, V): rows with that class are skipped, not scored.
      {"ignore_index_in_range", {9}, 4, 6, 2, true, 0.0, mean, {1, 4}, 2},
      {"default_tile_many_rows", {300}, 3, 5, 0, true, 0.1, mean, {7, 299}},
  };
}

// Random targets in [0, V) except the case's ignored rows (and, when ignore_index is a class,
// no other row with that class).
Tensor make_targets(const FusedCase& c, Generator& gen) {
  std::vector<double> t = randint(c.lead, gen, 0, c.vocab, DType::kI64).to_double_vector();
  for (double& v : t) {
    if (static_cast<int64_t>(v) == c.ignore_index) v = (v + 1 < c.vocab) ? v + 1 : 0;
  }
  for (int64_t r : c.ignored_rows) t[r] = static_cast<double>(c.ignore_index);
  return tensor_from(t, c.lead, c.target_dtype);
}

struct Inputs {
  Tensor hidden, weight, bias, targets;
};

Inputs make_inputs(const FusedCase& c, DType dtype, uint64_t seed) {
  Generator gen(seed);
  Shape hidden_shape = c.lead;
  hidden_shape.push_back(c.embed);
  Inputs in;
  in.hidden = randn(hidden_shape, gen, 0.0, 1.0, dtype);
  in.weight = randn({c.vocab, c.embed}, gen, 0.0, 1.0, dtype);
  if (c.bias) in.bias = randn({c.vocab}, gen, 0.0, 1.0, dtype);
  in.targets = make_targets(c, gen);
  return in;
}

backend::LinearCrossEntropyOptions all_grads(const FusedCase& c) {
  backend::LinearCrossEntropyOptions o;
  o.ignore_index = c.ignore_index;
  o.label_smoothing = c.smoothing;
  o.reduction = c.reduction;
  o.grad_hidden = o.grad_weight = o.grad_bias = true;
  o.tile_rows = c.tile_rows;
  return o;
}

backend::CrossEntropyOptions ce_options(const FusedCase& c) {
  return {c.ignore_index, c.smoothing, c.reduction};
}

class FusedVsComposed : public ::testing::TestWithParam<FusedCase> {};

// f64: the same quantities to double precision.
TEST_P(FusedVsComposed, F64) {
  const FusedCase& c = GetParam();
  const Inputs in = make_inputs(c, DType::kF64, 11);
  const backend::LinearCrossEntropyResult fused =
      backend::linear_cross_entropy(in.hidden, in.weight, in.bias, in.targets, all_grads(c));
  const Grads ref =
      composed(in.hidden, in.weight, in.bias, in.targets, ce_options(c), DzRounding::kNone);
  const Magnitudes mag = magnitudes(in.hidden, in.weight, in.bias, in.targets, ce_options(c));
  EXPECT_EQ(fused.valid_rows, static_cast<int64_t>(in.targets.numel() - c.ignored_rows.size()));
  EXPECT_EQ(fused.loss.dtype(), DType::kF64);
  EXPECT_TRUE(allclose(fused.loss, ref.loss, 1e-13, 1e-14));
  EXPECT_TRUE(within(fused.grad_hidden, ref.hidden, mag.hidden, 1e-13));
  EXPECT_TRUE(within(fused.grad_weight, ref.weight, mag.weight, 1e-13));
  if (c.bias) {
    EXPECT_TRUE(within(fused.grad_bias, ref.bias, mag.bias, 1e-13));
  } else {
    EXPECT_FALSE(fused.grad_bias.defined());
  }
}

// f32: equal up to the exp's rounding and the products' accumulation order.
TEST_P(FusedVsComposed, F32) {
  const FusedCase& c = GetParam();
  const Inputs in = make_inputs(c, DType::kF32, 12);
  const backend::LinearCrossEntropyResult fused =
      backend::linear_cross_entropy(in.hidden, in.weight, in.bias, in.targets, all_grads(c));
  const Grads ref =
      composed(in.hidden, in.weight, in.bias, in.targets, ce_options(c), DzRounding::kNone);
  const Magnitudes mag = magnitudes(in.hidden, in.weight, in.bias, in.targets, ce_options(c));
  EXPECT_EQ(fused.loss.dtype(), DType::kF32);
  EXPECT_TRUE(allclose(fused.loss, ref.loss, 2e-6, 1e-6));
  EXPECT_TRUE(within(fused.grad_hidden, ref.hidden, mag.hidden.to(DType::kF32), 1e-5));
  EXPECT_TRUE(within(fused.grad_weight, ref.weight, mag.weight.to(DType::kF32), 1e-5));
  if (c.bias) {
    EXPECT_TRUE(within(fused.grad_bias, ref.bias, mag.bias.to(DType::kF32), 1e-5));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedVsComposed, ::testing::ValuesIn(fused_cases()),
                         [](const ::testing::TestParamInfo<FusedCase>& info) {
                           return info.param.name;
                         });

TEST(LinearCrossEntropy, OnlyRequestedGradientsAreComputed) {
  const FusedCase c{"", {6}, 4, 5, 4, true, 0.0, Reduction::kMean, {}};
  const Inputs in = make_inputs(c, DType::kF64, 3);
  backend::LinearCrossEntropyOptions o;
  o.tile_rows = 4;
  const backend::LinearCrossEntropyResult loss_only =
      backend::linear_cross_entropy(in.hidden, in.weight, in.bias, in.targets, o);
  EXPECT_FALSE(loss_only.grad_hidden.defined() || loss_only.grad_weight.defined() ||
               loss_only.grad_bias.defined());
  const Grads ref =
      composed(in.hidden, in.weight, in.bias, in.targets, ce_options(c), DzRounding::kNone);
  EXPECT_TRUE(allclose(loss_only.loss, ref.loss, 1e-13, 1e-14));
  o.grad_weight = true;
  const backend::LinearCrossEntropyResult weight_only =
      backend::linear_cross_entropy(in.hidden, in.weight, in.bias, in.targets, o);
  EXPECT_FALSE(weight_only.grad_hidden.defined() || weight_only.grad_bias.defined());
  EXPECT_TRUE(allclose(weight_only.grad_weight, ref.weight, 1e-12, 1e-14));
}

TEST(LinearCrossEntropy, AllRowsIgnoredGiveNanMeanZeroSumAndZeroGradients) {
  for (Reduction reduction : {Reduction::kMean, Reduction::kSum}) {
    for (const Shape& lead : {Shape{3, 4}, Shape{0}}) {
      const FusedCase c{"", lead, 4, 5, 2, true, 0.1, reduction, {}};
      Inputs in = make_inputs(c, DType::kF32, 4);
      in.targets = full(lead, -100.0, DType::kI64);
      const backend::LinearCrossEntropyResult r =
          backend::linear_cross_entropy(in.hidden, in.weight, in.bias, in.targets, all_grads(c));
      EXPECT_EQ(r.valid_rows, 0);
      if (reduction == Reduction::kMean) {
        EXPECT_TRUE(std::isnan(r.loss.item()));
      } else {
        EXPECT_EQ(r.loss.item(), 0.0);
      }
      // As the composed ops: cross_entropy's loss, zero gradients.
      const Grads ref =
          composed(in.hidden, in.weight, in.bias, in.targets, ce_options(c), DzRounding::kNone);
      EXPECT_EQ(std::isnan(r.loss.item()), std::isnan(ref.loss.item()));
      EXPECT_TRUE(allclose(r.grad_hidden, zeros(in.hidden.shape()), 0, 0));
      EXPECT_TRUE(allclose(r.grad_weight, zeros(in.weight.shape()), 0, 0));
      EXPECT_TRUE(allclose(r.grad_bias, zeros(in.bias.shape()), 0, 0));
    }
  }
}

TEST(LinearCrossEntropy, NanLogitRowGivesNanLoss) {
  const FusedCase c{"", {5}, 3, 4, 2, false, 0.0, Reduction::kMean, {}};
  Inputs in = make_inputs(c, DType::kF32, 5);
  in.hidden.set({3, 1}, std::numeric_limits<double>::quiet_NaN());
  const backend::LinearCrossEntropyResult r =
      backend::linear_cross_entropy(in.hidden, in.weight, Tensor(), in.targets, all_grads(c));
  EXPECT_TRUE(std::isnan(r.loss.item()));
  EXPECT_TRUE(std::isnan(r.grad_hidden.at({3, 0})));
  EXPECT_FALSE(std::isnan(r.grad_hidden.at({2, 0})));
}

// ---- bf16 ----

// Frobenius norm of a − b.
double distance(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(s);
}

// The gradient products take dz rounded to bf16. Fused and composed round the same dz except
// where the two exps differ across a bf16 rounding boundary (rare: each such element moves by
// one bf16 ulp, 2^-8 relative), so: every element within 2^-8 of the magnitude, and fused much
// closer to the composed result with rounded dz than to the one with unrounded dz (which the
// bound alone would not tell apart).
void expect_bf16_products_match(const backend::LinearCrossEntropyResult& fused,
                                const Grads& rounded, const Grads& unrounded,
                                const Magnitudes& mag) {
  const double tol = std::ldexp(1.0, -8) + 1e-5;
  EXPECT_TRUE(within(fused.grad_hidden, rounded.hidden, mag.hidden, tol));
  EXPECT_TRUE(within(fused.grad_weight, rounded.weight, mag.weight, tol));
  EXPECT_LT(distance(fused.grad_hidden, rounded.hidden) * 8,
            distance(fused.grad_hidden, unrounded.hidden));
  EXPECT_LT(distance(fused.grad_weight, rounded.weight) * 8,
            distance(fused.grad_weight, unrounded.weight));
  // The bias gradient sums the unrounded dz.
  EXPECT_TRUE(within(fused.grad_bias, rounded.bias, mag.bias, 1e-5));
}

const FusedCase kBf16Case{"", {3, 29}, 24, 300, 16, true, 0.1, Reduction::kMean, {4, 50}};

TEST(LinearCrossEntropyBf16, Bf16OperandsRoundDlogits) {
  const Inputs in = make_inputs(kBf16Case, DType::kF32, 6);
  const Tensor hidden = in.hidden.to(DType::kBF16), weight = in.weight.to(DType::kBF16);
  const backend::LinearCrossEntropyResult fused =
      backend::linear_cross_entropy(hidden, weight, in.bias, in.targets, all_grads(kBf16Case));
  const auto options = ce_options(kBf16Case);
  const Grads rounded = composed(hidden, weight, in.bias, in.targets, options, DzRounding::kBf16);
  // Unrounded dz: the same products in f32 on the (exactly representable) bf16 operands.
  const Grads unrounded = composed(hidden.to(DType::kF32), weight.to(DType::kF32), in.bias,
                                   in.targets, options, DzRounding::kNone);
  EXPECT_EQ(fused.loss.dtype(), DType::kF32);
  EXPECT_TRUE(allclose(fused.loss, rounded.loss, 2e-6, 1e-6));
  expect_bf16_products_match(
      fused, rounded, unrounded,
      magnitudes(hidden.to(DType::kF32), weight.to(DType::kF32), in.bias, in.targets, options));
}

// The weight gradient is formed over groups of tiles (weight_gradient_rows): per tile, groups
// of 3 tiles with a partial last group, one group for all rows. Every grouping matches the
// composed products; the loss and grad_hidden (not grouped) are the same bits for all.
TEST(LinearCrossEntropyBf16, WeightGradientGroupsOfTilesMatchTheComposedProducts) {
  const Inputs in = make_inputs(kBf16Case, DType::kF32, 8);
  const Tensor hidden = in.hidden.to(DType::kBF16), weight = in.weight.to(DType::kBF16);
  const auto options = ce_options(kBf16Case);
  const Grads rounded = composed(hidden, weight, in.bias, in.targets, options, DzRounding::kBf16);
  const Grads unrounded = composed(hidden.to(DType::kF32), weight.to(DType::kF32), in.bias,
                                   in.targets, options, DzRounding::kNone);
  const Magnitudes mag =
      magnitudes(hidden.to(DType::kF32), weight.to(DType::kF32), in.bias, in.targets, options);
  backend::LinearCrossEntropyResult first;
  for (int64_t group : {16, 40, 1000}) {  // tile_rows is 16; 40 rounds up to 48; 85 valid rows
    SCOPED_TRACE("weight_gradient_rows " + std::to_string(group));
    backend::LinearCrossEntropyOptions o = all_grads(kBf16Case);
    o.weight_gradient_rows = group;
    const backend::LinearCrossEntropyResult fused =
        backend::linear_cross_entropy(hidden, weight, in.bias, in.targets, o);
    expect_bf16_products_match(fused, rounded, unrounded, mag);
    if (!first.loss.defined()) {
      first = fused;
      continue;
    }
    EXPECT_EQ(fused.loss.to_double_vector(), first.loss.to_double_vector());
    EXPECT_EQ(fused.grad_hidden.to_double_vector(), first.grad_hidden.to_double_vector());
    EXPECT_EQ(fused.grad_bias.to_double_vector(), first.grad_bias.to_double_vector());
  }
}

TEST(LinearCrossEntropyBf16, F32OperandsWithRoundingFlagTakeThePortablePath) {
  const Inputs in = make_inputs(kBf16Case, DType::kF32, 7);
  // f32 tensors holding bf16 values, as round_to_bf16_operand makes them without bf16 kernels.
  const Tensor hidden = in.hidden.to(DType::kBF16).to(DType::kF32);
  const Tensor weight = in.weight.to(DType::kBF16).to(DType::kF32);
  backend::LinearCrossEntropyOptions o = all_grads(kBf16Case);
  o.round_dlogits_to_bf16 = true;
  const backend::LinearCrossEntropyResult fused =
      backend::linear_cross_entropy(hidden, weight, in.bias, in.targets, o);
  const auto options = ce_options(kBf16Case);
  const Grads rounded =
      composed(hidden, weight, in.bias, in.targets, options, DzRounding::kBf16AsF32);
  const Grads unrounded = composed(hidden, weight, in.bias, in.targets, options, DzRounding::kNone);
  EXPECT_TRUE(allclose(fused.loss, rounded.loss, 2e-6, 1e-6));
  expect_bf16_products_match(fused, rounded, unrounded,
                             magnitudes(hidden, weight, in.bias, in.targets, options));
  // And the same as the bf16 kernels up to accumulation order and rare rounding flips.
  const backend::LinearCrossEntropyResult native = backend::linear_cross_entropy(
      hidden.to(DType::kBF16), weight.to(DType::kBF16), in.bias, in.targets, all_grads(kBf16Case));
  EXPECT_TRUE(allclose(native.loss, fused.loss, 2e-6, 1e-6));
  EXPECT_LT(distance(native.grad_weight, fused.grad_weight) * 8,
            distance(fused.grad_weight, unrounded.weight));
}

// Without a bias gradient the portable path writes only the rounded dz (the logits tile is not
// overwritten with the unrounded one): the same bits as with it, for a defined bias not asked
// for and for no bias at all (against the composed products).
TEST(LinearCrossEntropyBf16, PortablePathWithoutABiasGradientWritesTheSameRoundedDz) {
  const Inputs in = make_inputs(kBf16Case, DType::kF32, 8);
  const Tensor hidden = in.hidden.to(DType::kBF16).to(DType::kF32);
  const Tensor weight = in.weight.to(DType::kBF16).to(DType::kF32);
  backend::LinearCrossEntropyOptions with_bias = all_grads(kBf16Case);
  with_bias.round_dlogits_to_bf16 = true;
  backend::LinearCrossEntropyOptions without_bias = with_bias;
  without_bias.grad_bias = false;
  const backend::LinearCrossEntropyResult a =
      backend::linear_cross_entropy(hidden, weight, in.bias, in.targets, with_bias);
  const backend::LinearCrossEntropyResult b =
      backend::linear_cross_entropy(hidden, weight, in.bias, in.targets, without_bias);
  EXPECT_FALSE(b.grad_bias.defined());
  EXPECT_EQ(b.loss.to_double_vector(), a.loss.to_double_vector());
  EXPECT_EQ(b.grad_hidden.to_double_vector(), a.grad_hidden.to_double_vector());
  EXPECT_EQ(b.grad_weight.to_double_vector(), a.grad_weight.to_double_vector());

  const backend::LinearCrossEntropyResult no_bias =
      backend::linear_cross_entropy(hidden, weight, Tensor(), in.targets, without_bias);
  const auto options = ce_options(kBf16Case);
  const Grads rounded =
      composed(hidden, weight, Tensor(), in.targets, options, DzRounding::kBf16AsF32);
  const Grads unrounded =
      composed(hidden, weight, Tensor(), in.targets, options, DzRounding::kNone);
  const Magnitudes mag = magnitudes(hidden, weight, Tensor(), in.targets, options);
  const double tol = std::ldexp(1.0, -8) + 1e-5;
  EXPECT_TRUE(allclose(no_bias.loss, rounded.loss, 2e-6, 1e-6));
  EXPECT_TRUE(within(no_bias.grad_hidden, rounded.hidden, mag.hidden, tol));
  EXPECT_TRUE(within(no_bias.grad_weight, rounded.weight, mag.weight, tol));
  EXPECT_LT(distance(no_bias.grad_weight, rounded.weight) * 8,
            distance(no_bias.grad_weight, unrounded.weight));
}

// ---- errors ----

using rota::testing::expect_error;

TEST(LinearCrossEntropy, BadInputsAreErrorsNamingTheOpAndShapes) {
  const Tensor h = zeros({2, 3, 5});
  const Tensor w = zeros({7, 5});
  const Tensor t = zeros({2, 3}, DType::kI64);
  const backend::LinearCrossEntropyOptions o;
  auto run = [&](const Tensor& hh, const Tensor& ww, const Tensor& bb, const Tensor& tt,
                 const backend::LinearCrossEntropyOptions& oo) {
    return [=] { backend::linear_cross_entropy(hh, ww, bb, tt, oo); };
  };
  expect_error(run(h, zeros({7, 4}), Tensor(), t, o),
               "linear_cross_entropy: hidden [2,3,5] and weight [7,4]: embedding dims differ");
  expect_error(run(h, zeros({7}), Tensor(), t, o),
               "linear_cross_entropy: hidden [2,3,5] and weight [7]: expected hidden [..., E] "
               "and weight [V, E]");
  expect_error(run(h, w, Tensor(), zeros({6}, DType::kI64), o),
               "linear_cross_entropy: hidden [2,3,5] needs targets [2,3], got [6]");
  expect_error(run(h, w, zeros({6}), t, o),
               "linear_cross_entropy: bias [6] does not match weight [7,5] (expected [7])");
  expect_error(run(h, w.to(DType::kF64), Tensor(), t, o),
               "linear_cross_entropy: hidden dtype f32 and weight dtype f64 differ");
  expect_error(run(h, w, zeros({7}, DType::kF64), t, o),
               "linear_cross_entropy: bias dtype f64 (expected f32 for f32 operands)");
  expect_error(run(h, w, Tensor(), zeros({2, 3}), o),
               "linear_cross_entropy: targets dtype f32 is not an index type");
  expect_error(run(h, w, Tensor(), full({2, 3}, 7.0, DType::kI64), o),
               "linear_cross_entropy: target 7 at row 0 is out of range for 7 classes");
  backend::LinearCrossEntropyOptions none;
  none.reduction = Reduction::kNone;
  expect_error(run(h, w, Tensor(), t, none),
               "linear_cross_entropy: reduction none is not supported (expected mean or sum)");
  backend::LinearCrossEntropyOptions smoothing;
  smoothing.label_smoothing = 1.5;
  expect_error(run(h, w, Tensor(), t, smoothing),
               "linear_cross_entropy: label_smoothing 1.5 is outside [0, 1]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
