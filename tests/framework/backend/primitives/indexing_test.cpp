// Indexing kernels against plain multi-index loops: concat, copy_into, gather / scatter_add,
// index_select / index_add, masked_fill, where, tril / triu.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/indexing.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/index_math.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::for_each_index;
using testing::nonnegative_axis;

// Bitwise equality of two tensors' values (for pure copies and determinism checks).
::testing::AssertionResult same_values(const Tensor& a, const Tensor& b) {
  return allclose(a, b, 0.0, 0.0);
}

// Restores the thread count when a test changes it.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(backend::num_threads()) {}
  ~ThreadCountGuard() { backend::set_num_threads(saved_); }

 private:
  int saved_;
};

// ---- concat ----

struct ConcatCase {
  std::vector<Shape> shapes;
  int64_t axis;
};

// Expected concat built element by element: output index i along the axis belongs to the
// part whose running offset covers it.
Tensor concat_reference(const std::vector<Tensor>& parts, int64_t axis) {
  const int64_t a = axis < 0 ? axis + parts[0].dim() : axis;
  Shape shape = parts[0].shape();
  shape[a] = 0;
  for (const Tensor& p : parts) shape[a] += p.size(a);
  Tensor out = zeros(shape, parts[0].dtype());
  for_each_index(shape, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    size_t p = 0;
    while (src[a] >= parts[p].size(a)) src[a] -= parts[p++].size(a);
    out.set(idx, parts[p].at(src));
  });
  return out;
}

TEST(Concat, MatchesElementLoop) {
  const std::vector<ConcatCase> cases = {
      {{{2, 3}, {4, 3}}, 0},
      {{{2, 3}, {2, 1}, {2, 5}}, 1},
      {{{2, 3, 4}, {2, 2, 4}}, -2},
      {{{2, 3, 4}, {2, 3, 1}}, -1},
      {{{5}, {0}, {3}}, 0},
      {{{2, 0, 3}, {2, 2, 3}}, 1},
      {{{3, 2, 2}}, 2},
  };
  Generator gen(1);
  for (const ConcatCase& c : cases) {
    std::vector<Tensor> parts;
    for (const Shape& s : c.shapes) parts.push_back(randn(s, gen, 0, 1, DType::kF64));
    EXPECT_TRUE(same_values(backend::concat(parts, c.axis), concat_reference(parts, c.axis)))
        << "axis " << c.axis << " first " << shape_str(c.shapes[0]);
  }
}

TEST(Concat, NonContiguousPartsAndOtherDTypes) {
  Generator gen(2);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kI32, DType::kI64}) {
    const Tensor a = randn({4, 3}, gen, 0, 3, DType::kF64).to(dtype).transpose(0, 1);    // [3,4]
    const Tensor b = randn({3, 6}, gen, 0, 3, DType::kF64).to(dtype).slice(1, 0, 6, 2);  // [3,3]
    const Tensor out = backend::concat({a, b}, 1);
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_TRUE(same_values(out, concat_reference({a, b}, 1))) << dtype_name(dtype);
  }
}

TEST(Concat, LargeInputsTakeTheParallelPath) {
  // More than kParallelGrain elements, along the first axis (one output row) and the last.
  // Odd row counts make a thread's range start in the middle of a part's segment.
  Generator gen(3);
  const Tensor a = randn({151, 130}, gen, 0, 1, DType::kF32);
  const Tensor b = randn({171, 130}, gen, 0, 1, DType::kF32);
  const Tensor c = randn({151, 101}, gen, 0, 1, DType::kF32);
  for (int threads : {2, 3}) {
    ThreadCountGuard guard;
    backend::set_num_threads(threads);
    EXPECT_TRUE(same_values(backend::concat({a, b}, 0), concat_reference({a, b}, 0)));
    EXPECT_TRUE(same_values(backend::concat({a, c, a}, 1), concat_reference({a, c, a}, 1)));
  }
}

TEST(Concat, ErrorsNameTheOpAndShapes) {
  expect_error(
      [] {
        backend::concat({zeros({2, 3}), zeros({2, 4})}, 0);
      },
      "concat: [2,3] and [2,4] differ in dim 1 (axis 0)");
  expect_error(
      [] {
        backend::concat({zeros({2, 3}), zeros({2, 3, 1})}, 0);
      },
      "concat: [2,3] and [2,3,1] differ in rank");
  expect_error(
      [] {
        backend::concat({zeros({2}), zeros({2}, DType::kF64)}, 0);
      },
      "concat: dtypes differ (f32 [2] vs f64 [2])");
  expect_error([] { backend::concat({zeros({2, 3})}, 2); }, "concat: axis 2 out of range");
  expect_error([] { backend::concat({}, 0); }, "concat: no tensors");
}

// ---- copy_into ----

TEST(CopyInto, WritesThroughAStridedView) {
  Generator gen(4);
  Tensor base = zeros({4, 6, 5}, DType::kF64);
  const Tensor src = randn({5, 3, 4}, gen, 0, 1, DType::kF64).permute({2, 1, 0});  // [4,3,5]
  const Tensor region = base.slice(1, 1, 6, 2);                                    // [4,3,5]
  backend::copy_into(region, src);
  for_each_index(base.shape(), [&](const std::vector<int64_t>& i) {
    const bool inside = i[1] >= 1 && (i[1] - 1) % 2 == 0;
    const double expected = inside ? src.at({i[0], (i[1] - 1) / 2, i[2]}) : 0.0;
    ASSERT_EQ(base.at(i), expected) << i[0] << "," << i[1] << "," << i[2];
  });
  expect_error(
      [&] {
        backend::copy_into(region, zeros({4, 3, 5}));
      },
      "copy_into: f32 [4,3,5] into f64 [4,3,5]");
}

// ---- gather / scatter_add ----

struct GatherCase {
  Shape x_shape;
  Shape index_shape;
  int64_t axis;
};

const std::vector<GatherCase> kGatherCases = {
    {{5}, {7}, 0},
    {{4, 5}, {4, 3}, 1},
    {{4, 5}, {6, 5}, 0},
    {{4, 5}, {2, 3}, -1},
    {{3, 4, 5}, {2, 6, 3}, 1},
    {{3, 4, 5}, {3, 4, 8}, -1},
    {{3, 4, 5}, {5, 2, 5}, 0},
};

// index values in [0, x.size(axis)) with plenty of repeats.
Tensor random_index(const Shape& shape, int64_t n, Generator& gen, DType dtype) {
  return randint(shape, gen, 0, n, dtype);
}

TEST(Gather, MatchesElementLoop) {
  Generator gen(5);
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    for (const GatherCase& c : kGatherCases) {
      const int64_t a = nonnegative_axis(c.axis, c.x_shape);
      const Tensor x = randn(c.x_shape, gen, 0, 1, DType::kF64);
      const Tensor index = random_index(c.index_shape, c.x_shape[a], gen, index_dtype);
      Tensor expected = zeros(c.index_shape, DType::kF64);
      for_each_index(c.index_shape, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> src = i;
        src[a] = static_cast<int64_t>(index.at(i));
        expected.set(i, x.at(src));
      });
      EXPECT_TRUE(same_values(backend::gather(x, c.axis, index), expected))
          << shape_str(c.x_shape) << " axis " << c.axis;
      // A non-contiguous x gives the same values.
      const Tensor xt = x.clone().transpose(0, -1).contiguous().transpose(0, -1);
      EXPECT_FALSE(x.dim() > 1 && xt.is_contiguous());
      EXPECT_TRUE(same_values(backend::gather(xt, c.axis, index), expected));
    }
  }
}

TEST(ScatterAdd, MatchesElementLoopWithRepeatedIndices) {
  Generator gen(6);
  for (const GatherCase& c : kGatherCases) {
    const int64_t a = nonnegative_axis(c.axis, c.x_shape);
    const Tensor index = random_index(c.index_shape, c.x_shape[a], gen, DType::kI64);
    const Tensor src = randn(c.index_shape, gen, 0, 1, DType::kF64);
    Tensor expected = zeros(c.x_shape, DType::kF64);
    for_each_index(c.index_shape, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> dst = i;
      dst[a] = static_cast<int64_t>(index.at(i));
      expected.set(dst, expected.at(dst) + src.at(i));
    });
    EXPECT_TRUE(
        allclose(backend::scatter_add(c.x_shape, c.axis, index, src), expected, 1e-14, 1e-14))
        << shape_str(c.x_shape) << " axis " << c.axis;
  }
}

// Large f32 scatters summed in index order by a plain loop: the kernel must match bit for bit
// with one thread and with all threads (contributions to one element are never reordered).
TEST(ScatterAdd, DeterministicAcrossThreadCounts) {
  ThreadCountGuard guard;
  Generator gen(7);
  struct Big {
    Shape x_shape;
    Shape index_shape;
    int64_t axis;
  };
  // Axis 0 with one outer slice (column split), a narrow inner dim (row split), many outers.
  for (const Big& c : std::vector<Big>{
           {{50, 200}, {400, 200}, 0}, {{64, 2}, {20000, 2}, 0}, {{300, 40}, {300, 200}, 1}}) {
    const Tensor index = random_index(c.index_shape, c.x_shape[c.axis], gen, DType::kI32);
    const Tensor src = randn(c.index_shape, gen, 0, 1, DType::kF32);
    std::vector<float> expected(shape_numel(c.x_shape), 0.0f);
    const Strides xs = contiguous_strides(c.x_shape);
    for_each_index(c.index_shape, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> dst = i;
      dst[c.axis] = static_cast<int64_t>(index.at(i));
      expected[dst[0] * xs[0] + dst[1] * xs[1]] += static_cast<float>(src.at(i));
    });
    const Tensor want =
        tensor_from(std::vector<double>(expected.begin(), expected.end()), c.x_shape, DType::kF32);
    for (int threads : {1, 2, 3}) {
      backend::set_num_threads(threads);
      EXPECT_TRUE(same_values(backend::scatter_add(c.x_shape, c.axis, index, src), want))
          << shape_str(c.index_shape) << " threads " << threads;
    }
  }
}

TEST(Gather, ErrorsNameTheOpIndexAndDimSize) {
  const Tensor x = zeros({3, 5});
  expect_error(
      [&] {
        backend::gather(x, 1, tensor_from({0, 7}, {1, 2}, DType::kI64));
      },
      "gather: index 7 is out of range for dim 1 of size 5");
  expect_error(
      [&] {
        backend::gather(x, 0, tensor_from({-1}, {1, 1}, DType::kI32));
      },
      "gather: index -1 is out of range for dim 0 of size 3");
  expect_error(
      [&] {
        backend::gather(x, 0, zeros({2, 6}, DType::kI64));
      },
      "gather: index [2,6] is larger than x [3,5] in dim 1 (axis 0)");
  expect_error([&] { backend::gather(x, 0, zeros({2}, DType::kI64)); },
               "gather: index [2] and x [3,5] differ in rank");
  expect_error(
      [&] {
        backend::gather(x, 0, zeros({2, 2}));
      },
      "gather: index dtype f32 is not supported");
  expect_error(
      [&] {
        backend::scatter_add({3, 5}, 1, tensor_from({5}, {1, 1}, DType::kI64), zeros({1, 1}));
      },
      "scatter_add: index 5 is out of range for dim 1 of size 5");
}

// ---- index_select / index_add ----

struct SelectCase {
  Shape x_shape;
  int64_t axis;
  int64_t count;  // index length
};

const std::vector<SelectCase> kSelectCases = {
    {{6}, 0, 9},        {{5, 4}, 0, 7},    {{5, 4}, 1, 3},
    {{3, 4, 5}, -2, 6}, {{3, 4, 5}, 2, 8}, {{3, 4, 5}, 0, 0},
};

TEST(IndexSelect, MatchesElementLoop) {
  Generator gen(8);
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    for (const SelectCase& c : kSelectCases) {
      const int64_t a = nonnegative_axis(c.axis, c.x_shape);
      const Tensor x = randn(c.x_shape, gen, 0, 1, DType::kF64);
      const Tensor index = random_index({c.count}, c.x_shape[a], gen, index_dtype);
      Shape out_shape = c.x_shape;
      out_shape[a] = c.count;
      Tensor expected = zeros(out_shape, DType::kF64);
      for_each_index(out_shape, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> src = i;
        src[a] = static_cast<int64_t>(index.at({i[a]}));
        expected.set(i, x.at(src));
      });
      EXPECT_TRUE(same_values(backend::index_select(x, c.axis, index), expected))
          << shape_str(c.x_shape) << " axis " << c.axis;
      if (x.dim() > 1) {
        const Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);
        EXPECT_TRUE(same_values(backend::index_select(xt, c.axis, index), expected));
      }
    }
  }
}

TEST(IndexAdd, MatchesElementLoopWithRepeatedIndices) {
  Generator gen(9);
  for (const SelectCase& c : kSelectCases) {
    const int64_t a = nonnegative_axis(c.axis, c.x_shape);
    const Tensor index = random_index({c.count}, c.x_shape[a], gen, DType::kI64);
    Shape src_shape = c.x_shape;
    src_shape[a] = c.count;
    const Tensor src = randn(src_shape, gen, 0, 1, DType::kF64);
    Tensor expected = zeros(c.x_shape, DType::kF64);
    for_each_index(src_shape, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> dst = i;
      dst[a] = static_cast<int64_t>(index.at({i[a]}));
      expected.set(dst, expected.at(dst) + src.at(i));
    });
    EXPECT_TRUE(allclose(backend::index_add(c.x_shape, c.axis, index, src), expected, 1e-14, 1e-14))
        << shape_str(c.x_shape) << " axis " << c.axis;
  }
}

// The embedding-backward shape: [V, D] += rows of [N, D], heavy repeats. Bit-identical for any
// thread count, including a narrow D that forces the row split.
TEST(IndexAdd, DeterministicAcrossThreadCounts) {
  ThreadCountGuard guard;
  Generator gen(10);
  for (const auto& [vocab, width, count] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{40, 256, 300}, {30, 3, 20000}}) {
    const Tensor index = random_index({count}, vocab, gen, DType::kI64);
    const Tensor src = randn({count, width}, gen, 0, 1, DType::kF32);
    std::vector<float> expected(vocab * width, 0.0f);
    for (int64_t j = 0; j < count; ++j) {
      const int64_t v = static_cast<int64_t>(index.at({j}));
      for (int64_t d = 0; d < width; ++d) {
        expected[v * width + d] += static_cast<float>(src.at({j, d}));
      }
    }
    const Tensor want = tensor_from(std::vector<double>(expected.begin(), expected.end()),
                                    {vocab, width}, DType::kF32);
    for (int threads : {1, 2, 3}) {
      backend::set_num_threads(threads);
      EXPECT_TRUE(same_values(backend::index_add({vocab, width}, 0, index, src), want))
          << vocab << "x" << width << " threads " << threads;
    }
  }
}

TEST(IndexSelect, ErrorsNameTheOpIndexAndDimSize) {
  const Tensor x = zeros({3, 5});
  expect_error(
      [&] {
        backend::index_select(x, 0, tensor_from({1, 3}, {2}, DType::kI32));
      },
      "index_select: index 3 is out of range for dim 0 of size 3");
  expect_error([&] { backend::index_select(x, -1, tensor_from({-2}, {1}, DType::kI64)); },
               "index_select: index -2 is out of range for dim 1 of size 5");
  expect_error(
      [&] {
        backend::index_select(x, 0, zeros({2, 1}, DType::kI64));
      },
      "index_select: index must be 1-D, got [2,1]");
  expect_error(
      [&] {
        backend::index_add({3, 5}, 0, tensor_from({4}, {1}, DType::kI64), zeros({1, 5}));
      },
      "index_add: index 4 is out of range for dim 0 of size 3");
  expect_error(
      [&] {
        backend::index_add({3, 5}, 0, zeros({2}, DType::kI64), zeros({2, 4}));
      },
      "index_add: src [2,4] does not fit output [3,5] with index [2] (axis 0)");
}

// ---- masked_fill / where ----

TEST(MaskedFill, BroadcastMaskOfAnyDType) {
  Generator gen(11);
  const Tensor x = randn({3, 4, 5}, gen, 0, 1, DType::kF64);
  // Mask strides along the row: 1 ([..., 5]), 0 ([3,4,1], scalar) and 4 (transposed [5,4]).
  for (const Shape& mask_shape :
       std::vector<Shape>{{3, 4, 5}, {4, 5}, {3, 1, 5}, {5}, {3, 4, 1}, {}, {5, 4}}) {
    for (DType mask_dtype : {DType::kF32, DType::kF64, DType::kBF16, DType::kI32, DType::kI64}) {
      Tensor mask = randint(mask_shape, gen, 0, 2, DType::kI64).to(mask_dtype);
      if (mask_shape == Shape{5, 4}) mask = mask.transpose(0, 1);
      const Tensor me = mask.expand(x.shape());
      for (double value : {-1.5, -std::numeric_limits<double>::infinity()}) {
        Tensor expected = zeros(x.shape(), DType::kF64);
        for_each_index(x.shape(), [&](const std::vector<int64_t>& i) {
          expected.set(i, me.at(i) != 0 ? value : x.at(i));
        });
        EXPECT_TRUE(same_values(backend::masked_fill(x, mask, value), expected))
            << shape_str(mask_shape) << " " << dtype_name(mask_dtype);
      }
    }
  }
  // Integer x (e.g. replacing token ids) and a transposed x.
  const Tensor ids = randint({4, 3}, gen, 0, 100, DType::kI64);
  const Tensor mask = tensor_from({1, 0, 0}, {3}, DType::kI32);
  const Tensor filled = backend::masked_fill(ids, mask, 7);
  const Tensor xt = x.transpose(0, 2);  // [5,4,3]
  const Tensor filled_t = backend::masked_fill(xt, mask, 2.0);
  for_each_index({4, 3}, [&](const std::vector<int64_t>& i) {
    EXPECT_EQ(filled.at(i), i[1] == 0 ? 7.0 : ids.at(i));
  });
  for_each_index(xt.shape(), [&](const std::vector<int64_t>& i) {
    EXPECT_EQ(filled_t.at(i), i[2] == 0 ? 2.0 : xt.at(i));
  });
  expect_error(
      [&] {
        backend::masked_fill(x, zeros({3, 1}), 0);
      },
      "masked_fill: mask [3,1] does not broadcast to x [3,4,5]");
  expect_error(
      [&] {
        backend::masked_fill(x, zeros({2, 3, 4, 5}), 0);
      },
      "masked_fill: mask [2,3,4,5] does not broadcast to x [3,4,5]");
}

TEST(Where, ThreeWayBroadcast) {
  Generator gen(12);
  struct Case {
    Shape cond, a, b;
  };
  for (const Case& c : std::vector<Case>{{{3, 4}, {3, 4}, {3, 4}},
                                         {{3, 1}, {4}, {3, 4}},
                                         {{4}, {2, 3, 1}, {}},
                                         {{2, 1, 1}, {1, 3, 4}, {3, 1}}}) {
    const Tensor cond = randint(c.cond, gen, 0, 2, DType::kI64);
    const Tensor a = randn(c.a, gen, 0, 1, DType::kF64);
    const Tensor b = randn(c.b, gen, 0, 1, DType::kF64);
    const Shape shape = broadcast_shapes(broadcast_shapes(c.cond, c.a, "test"), c.b, "test");
    const Tensor ce = cond.expand(shape), ae = a.expand(shape), be = b.expand(shape);
    Tensor expected = zeros(shape, DType::kF64);
    for_each_index(shape, [&](const std::vector<int64_t>& i) {
      expected.set(i, ce.at(i) != 0 ? ae.at(i) : be.at(i));
    });
    EXPECT_TRUE(same_values(backend::where(cond, a, b), expected)) << shape_str(shape);
    EXPECT_TRUE(same_values(backend::where(cond.to(DType::kF32), a, b), expected));
  }
  expect_error([] { backend::where(zeros({2}), zeros({3}), zeros({3})); },
               "where: cond [2], a [3] and b [3] cannot be broadcast together");
  expect_error([] { backend::where(zeros({3}), zeros({3}), zeros({3}, DType::kF64)); },
               "where: a f32 [3] and b f64 [3] differ in dtype");
}

// ---- tril / triu ----

TEST(TriangleMask, MatchesDefinitionForAnyOffset) {
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {3, 6}, {6, 3}, {1, 5}, {0, 3}}) {
    for (int64_t k : {-7, -2, -1, 0, 1, 2, 8}) {
      const Tensor lower = backend::tril_mask(rows, cols, k, DType::kF64);
      const Tensor upper = backend::triu_mask(rows, cols, k, DType::kI64);
      ASSERT_EQ(lower.shape(), (Shape{rows, cols}));
      EXPECT_EQ(upper.dtype(), DType::kI64);
      for_each_index({rows, cols}, [&](const std::vector<int64_t>& i) {
        EXPECT_EQ(lower.at(i), i[1] - i[0] <= k ? 1.0 : 0.0) << rows << "x" << cols << " k " << k;
        EXPECT_EQ(upper.at(i), i[1] - i[0] >= k ? 1.0 : 0.0) << rows << "x" << cols << " k " << k;
      });
    }
  }
  // The causal mask: row r sees columns 0..r.
  EXPECT_TRUE(
      same_values(backend::tril_mask(3, 3), tensor_from({1, 0, 0, 1, 1, 0, 1, 1, 1}, {3, 3})));
}

TEST(Triangle, BatchedNonSquareAndStrided) {
  Generator gen(13);
  const Tensor x = randn({2, 3, 5, 4}, gen, 0, 1, DType::kF64).transpose(-1, -2);  // [2,3,4,5]
  for (int64_t k : {-2, 0, 1, 3}) {
    Tensor lower = zeros(x.shape(), DType::kF64);
    Tensor upper = zeros(x.shape(), DType::kF64);
    for_each_index(x.shape(), [&](const std::vector<int64_t>& i) {
      const int64_t diff = i[3] - i[2];
      lower.set(i, diff <= k ? x.at(i) : 0.0);
      upper.set(i, diff >= k ? x.at(i) : 0.0);
    });
    EXPECT_TRUE(same_values(backend::tril(x, k), lower)) << "k " << k;
    EXPECT_TRUE(same_values(backend::triu(x, k), upper)) << "k " << k;
  }
  // Large enough for the parallel path.
  const Tensor big = randn({4, 96, 100}, gen, 0, 1, DType::kF32);
  Tensor expected = zeros(big.shape());
  for_each_index(big.shape(), [&](const std::vector<int64_t>& i) {
    expected.set(i, i[2] - i[1] <= -3 ? big.at(i) : 0.0);
  });
  EXPECT_TRUE(same_values(backend::tril(big, -3), expected));
  expect_error([] { backend::tril(zeros({5}), 0); }, "tril: x [5] needs at least 2 dims");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
