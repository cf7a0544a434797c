// Backend matmul / linear / matmul_accumulate vs a plain double loop; layouts, cache, errors.
#include <array>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>

#include "framework/backend/primitives/matmul.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;

// ---- the reference: torch.matmul semantics as plain double loops ----

// C = op(A)·op(B) in double, plus |op(A)|·|op(B)| (the sum of |a_k b_k| per element), which
// bounds the rounding error of any summation order: |C_computed - C| <= γ · Σ|a_k b_k|.
struct Reference {
  Shape shape;
  std::vector<double> value;
  std::vector<double> magnitude;
  int64_t k = 0;
};

Reference reference_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : (ta ? a.transpose(-2, -1) : a);
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : (tb ? b.transpose(-2, -1) : b);
  const Shape batch = broadcast_shapes(Shape(a2.shape().begin(), a2.shape().end() - 2),
                                       Shape(b2.shape().begin(), b2.shape().end() - 2), "test");
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  const std::vector<double> av = a2.expand(sa).to_double_vector();
  const std::vector<double> bv = b2.expand(sb).to_double_vector();
  const int64_t batches = shape_numel(batch);
  Reference ref;
  ref.k = k;
  ref.value.assign(batches * m * n, 0.0);
  ref.magnitude.assign(batches * m * n, 0.0);
  for (int64_t p = 0; p < batches; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double x = av[(p * m + i) * k + q] * bv[(p * k + q) * n + j];
          sum += x;
          mag += std::abs(x);
        }
        ref.value[(p * m + i) * n + j] = sum;
        ref.magnitude[(p * m + i) * n + j] = mag;
      }
    }
  }
  ref.shape = batch;
  if (a.dim() != 1) ref.shape.push_back(m);
  if (b.dim() != 1) ref.shape.push_back(n);
  return ref;
}

// Unit roundoffs: a sum of K products in precision u is off by at most about (K + 2)·u·Σ|a b|
// whatever the order of summation (Higham, Accuracy and Stability, §3.1).
constexpr double kF64Unit = 1.1102230246251565e-16;  // 2^-53
constexpr double kF32Unit = 5.9604644775390625e-8;   // 2^-24

// actual (any dtype) equals ref.value + offset[i] within (K + 2)·unit·magnitude + extra·magnitude.
::testing::AssertionResult matches(const Tensor& actual, const Reference& ref, double unit,
                                   double extra = 0.0, const std::vector<double>& offset = {}) {
  if (actual.shape() != ref.shape) {
    return ::testing::AssertionFailure()
           << "shape " << shape_str(actual.shape()) << " vs expected " << shape_str(ref.shape);
  }
  const std::vector<double> got = actual.to_double_vector();
  for (size_t i = 0; i < got.size(); ++i) {
    const double expected = ref.value[i] + (offset.empty() ? 0.0 : offset[i]);
    const double base = offset.empty() ? 0.0 : std::abs(offset[i]);
    const double allowed = (static_cast<double>(ref.k) + 2) * unit * (ref.magnitude[i] + base) +
                           extra * ref.magnitude[i];
    if (!(std::abs(got[i] - expected) <= allowed)) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected "
                                           << expected << " (allowed error " << allowed << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- operand layouts: the same logical operand stored in different ways ----

enum class Layout {
  kContiguous,
  kTransposed,     // stored as [..., C, R] and viewed transposed (column-major)
  kPermuted,       // batch and row dims swapped in storage (like [B,T,H,D] viewed as [B,H,T,D])
  kPaddedRows,     // rows of a wider matrix (leading dimension > C)
  kExpandedBatch,  // first batch dim broadcast from size 1 (stride 0)
  kStepSlice,      // every other column (stride 2): oneDNN cannot read it, so it is copied
  kBroadcastRow,   // one row expanded to R rows (stride 0): copied too
};

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kTransposed:
      return "transposed";
    case Layout::kPermuted:
      return "permuted";
    case Layout::kPaddedRows:
      return "padded_rows";
    case Layout::kExpandedBatch:
      return "expanded_batch";
    case Layout::kStepSlice:
      return "step_slice";
    case Layout::kBroadcastRow:
      return "broadcast_row";
  }
  return "?";
}

// Layouts oneDNN reads through strides, without any copy.
bool reads_in_place(Layout layout) {
  return layout != Layout::kStepSlice && layout != Layout::kBroadcastRow;
}

// A random operand of logical shape `shape` stored with `layout` (where the rank allows it;
// otherwise contiguous). Values in [-1, 1).
Tensor make_operand(const Shape& shape, Layout layout, Generator& gen, DType dtype) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  Shape base = shape;
  switch (layout) {
    case Layout::kTransposed:
      if (nd < 2) break;
      std::swap(base[nd - 1], base[nd - 2]);
      return rand(base, gen, -1, 1, dtype).transpose(-2, -1);
    case Layout::kPermuted:
      if (nd < 3) break;
      std::swap(base[nd - 3], base[nd - 2]);
      return rand(base, gen, -1, 1, dtype).transpose(-3, -2);
    case Layout::kPaddedRows:
      base[nd - 1] += 3;
      return rand(base, gen, -1, 1, dtype).narrow(-1, 0, shape[nd - 1]);
    case Layout::kExpandedBatch:
      if (nd < 3) break;
      base[0] = 1;
      return rand(base, gen, -1, 1, dtype).expand(shape);
    case Layout::kStepSlice:
      base[nd - 1] *= 2;
      return rand(base, gen, -1, 1, dtype).slice(-1, 0, base[nd - 1], 2);
    case Layout::kBroadcastRow:
      if (nd < 2) break;
      base[nd - 2] = 1;
      return rand(base, gen, -1, 1, dtype).expand(shape);
    case Layout::kContiguous:
      break;
  }
  return rand(shape, gen, -1, 1, dtype);
}

// ---- the case table ----

struct MatmulCase {
  std::string name;
  Shape a;  // as stored (the transpose flags apply on top)
  Shape b;
  bool transpose_a = false;
  bool transpose_b = false;
};

std::vector<MatmulCase> matmul_cases() {
  return {
      {"square", {3, 4}, {4, 5}},
      {"all_ones_dims", {1, 1}, {1, 1}},
      {"k1_outer_product", {17, 1}, {1, 17}},
      {"row_times_column", {1, 17}, {17, 1}},
      {"odd_sizes", {17, 33}, {33, 19}},
      {"deep_and_wide", {5, 300}, {300, 270}},  // crosses the f64 loop's K and N blocks
      {"dot", {5}, {5}},
      {"vector_matrix", {5}, {5, 3}},
      {"matrix_vector", {4, 5}, {5}},
      {"batched_matrix_vector", {2, 4, 5}, {5}},
      {"vector_batched", {5}, {2, 5, 3}},
      {"batched", {2, 3, 4}, {2, 4, 5}},
      {"broadcast_both", {2, 1, 4, 5}, {3, 5, 6}},
      {"broadcast_a", {3, 4}, {2, 4, 5}},
      {"broadcast_b", {2, 3, 4}, {4, 5}},
      {"transpose_a", {4, 3}, {4, 5}, true, false},
      {"transpose_b", {3, 4}, {5, 4}, false, true},
      {"transpose_both_batched", {2, 4, 3}, {2, 5, 4}, true, true},
      {"transpose_b_broadcast", {2, 1, 3, 4}, {3, 5, 4}, false, true},
      {"attention_scores", {2, 3, 7, 8}, {2, 3, 7, 8}, false, true},
      {"empty_k", {3, 0}, {0, 4}},
      {"empty_m", {0, 4}, {4, 5}},
  };
}

const std::vector<std::pair<Layout, Layout>> kLayoutPairs = {
    {Layout::kContiguous, Layout::kContiguous},    {Layout::kTransposed, Layout::kTransposed},
    {Layout::kContiguous, Layout::kTransposed},    {Layout::kPermuted, Layout::kPermuted},
    {Layout::kPaddedRows, Layout::kExpandedBatch}, {Layout::kExpandedBatch, Layout::kPaddedRows},
    {Layout::kStepSlice, Layout::kBroadcastRow},   {Layout::kBroadcastRow, Layout::kStepSlice},
};

// matmul of the case's operands in each layout pair of kLayoutPairs (drawn in `dtype` from one
// Generator(seed)): the dtype is kept, the result is contiguous and within `unit` of the double
// loop; in f32, views that oneDNN reads in place are never copied.
void expect_matches_reference_loop(const MatmulCase& c, uint64_t seed, DType dtype, double unit) {
  Generator gen(seed);
  for (const auto& [la, lb] : kLayoutPairs) {
    const Tensor a = make_operand(c.a, la, gen, dtype);
    const Tensor b = make_operand(c.b, lb, gen, dtype);
    const int64_t copies_before = backend::matmul_operand_copies();
    const Tensor out = backend::matmul(a, b, c.transpose_a, c.transpose_b);
    const int64_t copies = backend::matmul_operand_copies() - copies_before;
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_TRUE(matches(out, reference_matmul(a, b, c.transpose_a, c.transpose_b), unit))
        << layout_name(la) << " x " << layout_name(lb);
    // Transposed, permuted, padded and broadcast views go to oneDNN as strides, never copied.
    if (dtype == DType::kF32 && reads_in_place(la) && reads_in_place(lb)) {
      EXPECT_EQ(copies, 0) << layout_name(la) << " x " << layout_name(lb);
    }
  }
}

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTest, F64MatchesReferenceLoop) {
  expect_matches_reference_loop(GetParam(), 17, DType::kF64, kF64Unit);
}

TEST_P(MatmulTest, F32MatchesReferenceLoop) {
  expect_matches_reference_loop(GetParam(), 19, DType::kF32, kF32Unit);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTest, ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<MatmulCase>& info) {
                           return info.param.name;
                         });

TEST(Matmul, UnexpressibleStridesAreCopiedAndStillCorrect) {
  Generator gen(23);
  // [6, 10] with column stride 2: neither rows nor columns are unit-stride.
  const Tensor a = make_operand({6, 5}, Layout::kStepSlice, gen, DType::kF32);
  const Tensor b = make_operand({5, 4}, Layout::kContiguous, gen, DType::kF32);
  const int64_t before = backend::matmul_operand_copies();
  const Tensor out = backend::matmul(a, b);
  EXPECT_EQ(backend::matmul_operand_copies() - before, 1);
  EXPECT_TRUE(matches(out, reference_matmul(a, b, false, false), kF32Unit));
}

// matmul_time(): every oneDNN product is counted; only those outside parallel regions add wall
// time, and f64 products (the plain loop, not oneDNN) are not counted at all.
TEST(Matmul, TimeCountsOneDnnProductsAndTheirWallTime) {
  Generator gen(31);
  const Tensor a = rand({256, 256}, gen, -1, 1);
  const Tensor b = rand({256, 256}, gen, -1, 1);
  backend::reset_matmul_time();
  EXPECT_EQ(backend::matmul_time().products, 0);
  EXPECT_EQ(backend::matmul_time().seconds, 0.0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) backend::matmul(a, b);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const backend::MatmulTime serial = backend::matmul_time();
  EXPECT_EQ(serial.products, 3);
  EXPECT_EQ(serial.products_in_parallel_regions, 0);
  EXPECT_GT(serial.seconds, 0.0);
  EXPECT_LE(serial.seconds, elapsed);  // inside the caller's own measurement

  backend::matmul(a.to(DType::kF64), b.to(DType::kF64));
  EXPECT_EQ(backend::matmul_time().products, 3);

  int team = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      team = omp_get_num_threads();
      backend::matmul(a, b);
    }
  }
  const backend::MatmulTime after = backend::matmul_time();
  EXPECT_EQ(after.products, 4);
  // A team of one thread is no parallel region for OpenMP (omp_in_parallel() is false).
  EXPECT_EQ(after.products_in_parallel_regions, team > 1 ? 1 : 0);
  if (team > 1) {
    EXPECT_EQ(after.seconds, serial.seconds);
  }
  backend::reset_matmul_time();
  EXPECT_EQ(backend::matmul_time().products, 0);
}

TEST(Matmul, F32PathAgreesWithF64Path) {
  Generator gen(29);
  const Tensor a = rand({3, 70, 130}, gen, -1, 1, DType::kF64);
  const Tensor b = rand({130, 90}, gen, -1, 1, DType::kF64);
  const Tensor expected = backend::matmul(a, b);
  const Tensor out = backend::matmul(a.to(DType::kF32), b.to(DType::kF32));
  // Inputs rounded to f32 (relative 2^-24 each) and f32 sums of 130 terms of size <= 1:
  // errors stay well below 1e-4 in absolute terms.
  EXPECT_TRUE(allclose(out, expected, 0.0, 1e-4));
}

TEST(Matmul, Bf16InputsGiveF32Output) {
  Generator gen(31);
  const Tensor a = rand({2, 33, 64}, gen, -1, 1, DType::kF32);
  const Tensor b = rand({64, 40}, gen, -1, 1, DType::kF32);
  const Tensor a16 = a.to(DType::kBF16);
  const Tensor b16 = b.to(DType::kBF16);
  const Tensor out = backend::matmul(a16, b16);
  EXPECT_EQ(out.dtype(), DType::kF32);
  // Against the bf16-rounded inputs, only f32 accumulation error remains (oneDNN multiplies
  // bf16 pairs exactly and sums in f32).
  EXPECT_TRUE(matches(out, reference_matmul(a16, b16, false, false), kF32Unit));
  // Against the unrounded f32 inputs the loose bf16 bound applies: each input is rounded to 8
  // significant bits (relative error <= 2^-9), so each product is off by at most
  // (2·2^-9 + 2^-18)·|a b| < 2^-7.9·|a b|; we allow 2^-7 · Σ|a b| on top of the f32 bound.
  EXPECT_TRUE(matches(out, reference_matmul(a, b, false, false), kF32Unit, 1.0 / 128));
  // Transposed bf16 views are read in place as well.
  const Tensor bt16 = b.transpose(0, 1).contiguous().to(DType::kBF16);
  EXPECT_TRUE(matches(backend::matmul(a16, bt16, false, true),
                      reference_matmul(a16, bt16, false, true), kF32Unit));
}

// ---- linear ----

struct LinearCase {
  std::string name;
  Shape x;
  int64_t out_features;
  bool bias;
  Layout x_layout = Layout::kContiguous;
};

// y[r, o] = Σ_i x[r, i] W[o, i] + bias[o], as a Reference over x's leading dims.
Reference reference_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  Reference ref = reference_matmul(x, w, false, true);
  if (bias.defined()) {
    const std::vector<double> bv = bias.to_double_vector();
    const size_t out_features = bv.size();
    for (size_t i = 0; i < ref.value.size(); ++i) {
      ref.value[i] += bv[i % out_features];
      ref.magnitude[i] += std::abs(bv[i % out_features]);
    }
  }
  return ref;
}

TEST(Linear, MatchesReferenceInEveryDtype) {
  const std::vector<LinearCase> cases = {
      {"2d", {4, 6}, 5, true},
      {"2d_no_bias", {4, 6}, 5, false},
      {"3d", {2, 3, 6}, 5, true},
      {"1d", {6}, 5, true},
      {"transposed_x", {7, 6}, 3, true, Layout::kTransposed},
      {"padded_x", {2, 7, 6}, 3, false, Layout::kPaddedRows},
      {"permuted_x", {2, 7, 6}, 3, true, Layout::kPermuted},
      {"odd", {17, 33}, 1, true},
  };
  Generator gen(37);
  for (const LinearCase& c : cases) {
    const int64_t in_features = c.x.back();
    for (DType dtype : {DType::kF64, DType::kF32}) {
      const Tensor x = make_operand(c.x, c.x_layout, gen, dtype);
      const Tensor w = rand({c.out_features, in_features}, gen, -1, 1, dtype);
      const Tensor bias = c.bias ? rand({c.out_features}, gen, -1, 1, dtype) : Tensor();
      const Tensor y = backend::linear(x, w, bias);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(
          matches(y, reference_linear(x, w, bias), dtype == DType::kF64 ? kF64Unit : kF32Unit))
          << c.name << " " << dtype_name(dtype);
    }
    // bf16 x and weight with an f32 and a bf16 bias; compared with the rounded inputs.
    for (DType bias_dtype : {DType::kF32, DType::kBF16}) {
      const Tensor x = make_operand(c.x, c.x_layout, gen, DType::kF32).to(DType::kBF16);
      const Tensor w = rand({c.out_features, in_features}, gen, -1, 1, DType::kBF16);
      const Tensor bias = c.bias ? rand({c.out_features}, gen, -1, 1, bias_dtype) : Tensor();
      const Tensor y = backend::linear(x, w, bias);
      EXPECT_EQ(y.dtype(), DType::kF32);
      EXPECT_TRUE(matches(y, reference_linear(x, w, bias), kF32Unit))
          << c.name << " bf16 with " << dtype_name(bias_dtype) << " bias";
    }
  }
}

TEST(Linear, ViewsAreReadWithoutCopies) {
  Generator gen(41);
  const Tensor w = rand({12, 16}, gen, -1, 1);
  const Tensor bias = rand({12}, gen, -1, 1);
  // The weight is always read as a transposed view; x contiguous, transposed or with rows that
  // do not merge (a permuted [B, T, In] view goes through a batched product instead).
  for (Layout layout : {Layout::kContiguous, Layout::kTransposed, Layout::kPermuted}) {
    const Tensor x = make_operand({3, 8, 16}, layout, gen, DType::kF32);
    const int64_t before = backend::matmul_operand_copies();
    const Tensor y = backend::linear(x, w, bias);
    EXPECT_EQ(backend::matmul_operand_copies(), before) << layout_name(layout);
    EXPECT_TRUE(matches(y, reference_linear(x, w, bias), kF32Unit)) << layout_name(layout);
  }
}

TEST(Linear, EmptyDims) {
  Generator gen(42);
  EXPECT_EQ(backend::linear(zeros({0, 4}), rand({3, 4}, gen), rand({3}, gen)).shape(),
            (Shape{0, 3}));
  EXPECT_EQ(backend::linear(rand({2, 4}, gen), zeros({0, 4}), zeros({0})).shape(), (Shape{2, 0}));
  // In = 0: the product is an empty sum, so only the bias remains.
  const Tensor bias = rand({3}, gen);
  const Tensor y = backend::linear(zeros({2, 0}), zeros({3, 0}), bias);
  EXPECT_TRUE(allclose(y, bias.expand({2, 3}).contiguous(), 0, 0));
}

// ---- matmul_accumulate ----

TEST(MatmulAccumulate, AddsTheProductToOut) {
  struct Case {
    Shape a, b;
    bool ta, tb;
    bool transposed_out;  // out is a transposed view (not writable in place by oneDNN)
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}, false, false, false},    {{7, 5}, {7, 3}, true, false, false},
      {{5, 7}, {3, 7}, false, true, false},     {{2, 5, 7}, {2, 7, 3}, false, false, false},
      {{5, 7}, {7, 3}, false, false, true},     {{7}, {7, 3}, false, false, false},
      {{2, 5, 7}, {7, 3}, false, false, false},
  };
  Generator gen(43);
  for (DType dtype : {DType::kF64, DType::kF32}) {
    for (const Case& c : cases) {
      const Tensor a = rand(c.a, gen, -1, 1, dtype);
      const Tensor b = rand(c.b, gen, -1, 1, dtype);
      const Reference ref = reference_matmul(a, b, c.ta, c.tb);
      Tensor out;
      if (c.transposed_out) {
        Shape swapped = ref.shape;
        std::swap(swapped[0], swapped[1]);
        out = rand(swapped, gen, -1, 1, dtype).transpose(0, 1);
      } else {
        out = rand(ref.shape, gen, -1, 1, dtype);
      }
      const std::vector<double> before = out.to_double_vector();
      backend::matmul_accumulate(out, a, b, c.ta, c.tb);
      EXPECT_TRUE(matches(out, ref, dtype == DType::kF64 ? kF64Unit : kF32Unit, 0.0, before))
          << shape_str(c.a) << " x " << shape_str(c.b) << " " << dtype_name(dtype);
    }
  }
}

TEST(MatmulAccumulate, BatchDimsWhereNeitherOperandVaries) {
  // a is one matrix expanded over the batch and b has no batch: every output slice is the
  // same product, computed once and added to each slice of out.
  Generator gen(45);
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const Tensor a = rand({1, 5, 7}, gen, -1, 1, dtype).expand({3, 5, 7});
    const Tensor b = rand({7, 4}, gen, -1, 1, dtype);
    const Reference ref = reference_matmul(a, b, false, false);
    Tensor out = rand({3, 5, 4}, gen, -1, 1, dtype);
    const std::vector<double> before = out.to_double_vector();
    backend::matmul_accumulate(out, a, b);
    const double unit = dtype == DType::kF64 ? kF64Unit : kF32Unit;
    EXPECT_TRUE(matches(out, ref, unit, 0.0, before)) << dtype_name(dtype);
    EXPECT_TRUE(matches(backend::matmul(a, b), ref, unit)) << dtype_name(dtype);
  }
}

TEST(MatmulAccumulate, Bf16AccumulatesIntoF32) {
  Generator gen(47);
  const Tensor a = rand({9, 32}, gen, -1, 1, DType::kBF16);
  const Tensor b = rand({16, 32}, gen, -1, 1, DType::kBF16);
  Tensor out = rand({9, 16}, gen, -1, 1, DType::kF32);
  const std::vector<double> before = out.to_double_vector();
  backend::matmul_accumulate(out, a, b, false, true);
  EXPECT_TRUE(matches(out, reference_matmul(a, b, false, true), kF32Unit, 0.0, before));
}

// ---- the primitive cache ----

TEST(MatmulCache, OnePrimitivePerLayout) {
  backend::clear_matmul_cache();
  EXPECT_EQ(backend::matmul_cache_size(), 0u);
  Generator gen(53);
  const Tensor a = rand({8, 16}, gen);
  const Tensor b = rand({16, 4}, gen);
  backend::matmul(a, b);
  EXPECT_EQ(backend::matmul_cache_size(), 1u);
  // Same shapes, strides and dtypes (even other tensors): the cached primitive is reused.
  backend::matmul(rand({8, 16}, gen), rand({16, 4}, gen));
  EXPECT_EQ(backend::matmul_cache_size(), 1u);
  // A transposed operand is another layout, so another primitive.
  backend::matmul(a, b.transpose(0, 1).contiguous(), false, true);
  EXPECT_EQ(backend::matmul_cache_size(), 2u);
  // Accumulation (sum post-op) is another primitive; repeating it is not.
  Tensor out = zeros({8, 4});
  backend::matmul_accumulate(out, a, b);
  backend::matmul_accumulate(out, a, b);
  EXPECT_EQ(backend::matmul_cache_size(), 3u);
  // f64 runs the reference loop and never touches the cache.
  backend::matmul(a.to(DType::kF64), b.to(DType::kF64));
  EXPECT_EQ(backend::matmul_cache_size(), 3u);
  backend::clear_matmul_cache();
  EXPECT_EQ(backend::matmul_cache_size(), 0u);
}

// ---- errors name the op and the shapes ----

TEST(MatmulErrors, MessagesNameTheOpAndShapes) {
  expect_error(
      [] {
        backend::matmul(zeros({4, 128, 256}), zeros({512, 64}));
      },
      "matmul: [4,128,256] x [512,64]: inner dims differ");
  expect_error(
      [] {
        backend::matmul(zeros({3, 4}), zeros({4, 5}), false, true);
      },
      "matmul: [3,4] x [4,5]^T: inner dims differ");
  expect_error(
      [] {
        backend::matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
      },
      "matmul: [2,3,4] x [3,4,5]: batch dims [2] and [3] cannot be broadcast");
  expect_error([] { backend::matmul(zeros({3}), zeros({4})); },
               "matmul: [3] x [4]: inner dims differ");
  expect_error([] { backend::matmul(zeros({}), zeros({4})); },
               "matmul: [] x [4]: operands need at least one dim");
  expect_error(
      [] {
        backend::matmul(zeros({2, 2}), zeros({2, 2}, DType::kF64));
      },
      "matmul: operand dtypes f32 and f64 differ");
  expect_error(
      [] {
        backend::matmul(zeros({2, 2}, DType::kI32), zeros({2, 2}, DType::kI32));
      },
      "matmul: dtype i32 is not supported");
  expect_error(
      [] {
        backend::linear(zeros({2, 5}), zeros({4, 6}), Tensor());
      },
      "linear: x [2,5] and weight [4,6]: in features differ");
  expect_error(
      [] {
        backend::linear(zeros({2, 6}), zeros({4, 6}), zeros({5}));
      },
      "linear: bias [5] does not match weight [4,6] (expected [4])");
  expect_error(
      [] {
        backend::linear(zeros({2, 6}), zeros({4, 6}), zeros({4}, DType::kF64));
      },
      "linear: bias dtype f64 does not suit f32 x and weight");
  expect_error(
      [] {
        Tensor out = zeros({3, 5});
        backend::matmul_accumulate(out, zeros({3, 4}), zeros({4, 6}));
      },
      "matmul_accumulate: out [3,5] f32 does not match the product [3,4] x [4,6] -> [3,6] f32");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota

namespace rota {
namespace ROTA_TEST_FILE_NS {

// dW = gᵀ·x in either orientation (In > Out takes the transposed route) against a double loop.
TEST(MatmulWeightGradient, BothOrientationsMatchTheDefinition) {
  Generator gen(44);
  for (auto [rows, out, in] :
       std::vector<std::array<int64_t, 3>>{{37, 5, 9}, {37, 9, 5}, {64, 8, 8}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Tensor g = randn({rows, out}, gen, 0, 1, dtype);
      const Tensor x = randn({rows, in}, gen, 0, 1, dtype);
      const Tensor dw = backend::matmul_weight_gradient(g, x);
      ASSERT_EQ(dw.shape(), Shape({out, in}));
      ASSERT_TRUE(dw.is_contiguous());
      const std::vector<double> gv = g.to_double_vector(), xv = x.to_double_vector(),
                                got = dw.to_double_vector();
      for (int64_t o = 0; o < out; ++o) {
        for (int64_t i = 0; i < in; ++i) {
          double want = 0;
          for (int64_t r = 0; r < rows; ++r) want += gv[r * out + o] * xv[r * in + i];
          EXPECT_NEAR(got[o * in + i], want, dtype == DType::kF64 ? 1e-12 : 1e-4)
              << rows << "x" << out << "x" << in;
        }
      }
    }
  }
  EXPECT_THROW(backend::matmul_weight_gradient(randn({3, 2}, gen), randn({4, 2}, gen)), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
