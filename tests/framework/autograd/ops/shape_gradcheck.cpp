// Shape and view ops: forward against hand-built element maps, views really share storage,
// gradients against finite differences (incl. non-contiguous inputs and negative axes).
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/shape.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"
#include "tests/support/index_math.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::for_each_index;
using testing::gradcheck;
using testing::non_contiguous;
using testing::random_tensor;

// Expected output of `shape` where element i is x.at(source(i)).
Tensor map_elements(
    const Tensor& x, const Shape& shape,
    const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& source) {
  Tensor out = zeros(shape, DType::kF64);
  for_each_index(shape, [&](const std::vector<int64_t>& i) { out.set(i, x.at(source(i))); });
  return out;
}

// Row-major flat position of a multi-index.
int64_t flat_index(const std::vector<int64_t>& i, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + i[d];
  return flat;
}

// Multi-index of a row-major flat position.
std::vector<int64_t> unflatten_index(int64_t flat, const Shape& shape) {
  std::vector<int64_t> i(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    i[d] = flat % shape[d];
    flat /= shape[d];
  }
  return i;
}

// ---- forward values ----

TEST(ShapeOps, ReshapeViewFlattenKeepRowMajorOrder) {
  const Tensor x = random_tensor({2, 3, 4}, 1);
  const auto flat_source = [&](const Shape& out_shape) {
    return [&, out_shape](const std::vector<int64_t>& i) {
      return unflatten_index(flat_index(i, out_shape), x.shape());
    };
  };
  EXPECT_TRUE(allclose(reshape(Variable(x), {4, -1}).data(),
                       map_elements(x, {4, 6}, flat_source({4, 6})), 0, 0));
  EXPECT_TRUE(allclose(view(Variable(x), {6, 4}).data(),
                       map_elements(x, {6, 4}, flat_source({6, 4})), 0, 0));
  EXPECT_EQ(flatten(Variable(x)).shape(), (Shape{24}));
  EXPECT_EQ(flatten(Variable(x), 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(Variable(x), 0, -2).shape(), (Shape{6, 4}));
  EXPECT_EQ(flatten(Variable(x), -2, -2).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(flatten(Variable(scalar_tensor(2.0))).shape(), (Shape{1}));
  EXPECT_TRUE(allclose(flatten(Variable(x), 1).data(),
                       map_elements(x, {2, 12}, flat_source({2, 12})), 0, 0));
  // A transposed tensor cannot be viewed flat, but can be reshaped (copy, same order).
  const Tensor xt = x.transpose(0, 2);  // [4,3,2]
  expect_error([&] { view(Variable(xt), {24}); }, "view: cannot view [4,3,2]");
  EXPECT_TRUE(allclose(reshape(Variable(xt), {24}).data(),
                       map_elements(xt, {24},
                                    [&](const std::vector<int64_t>& i) {
                                      return unflatten_index(i[0], xt.shape());
                                    }),
                       0, 0));
  expect_error([&] { flatten(Variable(x), 2, 1); }, "flatten: start_dim 2 comes after end_dim 1");
}

TEST(ShapeOps, PermuteTransposeSliceNarrowMapIndices) {
  const Tensor x = random_tensor({3, 4, 5}, 2);
  const Variable v(x);
  EXPECT_TRUE(allclose(permute(v, {2, 0, 1}).data(),
                       map_elements(x, {5, 3, 4},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[1], i[2], i[0]};
                                    }),
                       0, 0));
  EXPECT_TRUE(allclose(transpose(v, -1, 0).data(),
                       map_elements(x, {5, 4, 3},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[2], i[1], i[0]};
                                    }),
                       0, 0));
  // slice(dim 1, 0, 4, step 2) keeps rows 0 and 2; (dim -1, -4 -> 1, 100 -> 5, 3) keeps 1, 4.
  EXPECT_TRUE(allclose(slice(v, 1, 0, 4, 2).data(),
                       map_elements(x, {3, 2, 5},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[0], 2 * i[1], i[2]};
                                    }),
                       0, 0));
  EXPECT_TRUE(allclose(slice(v, -1, -4, 100, 3).data(),
                       map_elements(x, {3, 4, 2},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[0], i[1], 1 + 3 * i[2]};
                                    }),
                       0, 0));
  EXPECT_TRUE(allclose(narrow(v, 0, 1, 2).data(),
                       map_elements(x, {2, 4, 5},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[0] + 1, i[1], i[2]};
                                    }),
                       0, 0));
  expect_error([&] { narrow(v, 0, 2, 2); }, "narrow: [2, 4) out of range for dim 0 of [3,4,5]");
  expect_error([&] { permute(v, {0, 0, 1}); }, "permute: axis 0 repeated");
}

TEST(ShapeOps, ExpandSqueezeUnsqueeze) {
  const Tensor x = random_tensor({3, 1}, 3);
  const Variable v(x);
  EXPECT_TRUE(allclose(expand(v, {2, 3, 4}).data(),
                       map_elements(x, {2, 3, 4},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[1], 0};
                                    }),
                       0, 0));
  EXPECT_EQ(unsqueeze(v, 0).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(unsqueeze(v, -1).shape(), (Shape{3, 1, 1}));
  EXPECT_EQ(unsqueeze(v, 1).shape(), (Shape{3, 1, 1}));
  EXPECT_EQ(squeeze(v, -1).shape(), (Shape{3}));
  EXPECT_EQ(squeeze(Variable(zeros({1, 3, 1, 2}))).shape(), (Shape{3, 2}));
  expect_error([&] { squeeze(v, 0); }, "squeeze: dim 0 of [3,1] has size 3, not 1");
  expect_error([&] { expand(v, {2, 2}); }, "expand: cannot expand [3,1] to [2,2]");
}

TEST(ShapeOps, ViewsShareStorage) {
  Tensor x = random_tensor({4, 6}, 4);
  const Variable v(x);
  const std::vector<Variable> views = {
      reshape(v, {6, 4}), view(v, {2, 12}),
      flatten(v),         permute(v, {1, 0}),
      transpose(v, 0, 1), slice(v, 1, 1, 5, 2),
      narrow(v, 0, 1, 2), expand(unsqueeze(v, 0), {3, 4, 6}),
      unsqueeze(v, 1),    squeeze(unsqueeze(v, 0), 0),
  };
  const std::vector<Variable> pieces = split(v, {1, 3}, 0);
  const std::vector<Variable> chunks = chunk(v, 4, 1);
  for (const Variable& w : views) EXPECT_EQ(w.data().storage(), x.storage());
  for (const Variable& p : pieces) EXPECT_EQ(p.data().storage(), x.storage());
  for (const Variable& c : chunks) EXPECT_EQ(c.data().storage(), x.storage());
  // Writing through the input shows up in every view; writing through a view shows in x.
  x.set({1, 3}, 42.0);
  EXPECT_EQ(views[0].data().at({2, 1}), 42.0);  // flat 9 = [2,1] of [6,4]
  EXPECT_EQ(views[3].data().at({3, 1}), 42.0);
  EXPECT_EQ(views[5].data().at({1, 1}), 42.0);  // columns 1, 3 -> position 1
  EXPECT_EQ(views[6].data().at({0, 3}), 42.0);
  EXPECT_EQ(views[7].data().at({2, 1, 3}), 42.0);
  EXPECT_EQ(pieces[1].data().at({0, 3}), 42.0);
  EXPECT_EQ(chunks[1].data().at({1, 1}), 42.0);  // chunks of 2 columns: [2, 4)
  Tensor through = views[4].data();              // transpose
  through.set({5, 3}, -7.0);
  EXPECT_EQ(x.at({3, 5}), -7.0);
  // contiguous() of a contiguous tensor is the same storage; of a transposed one a copy.
  EXPECT_EQ(contiguous(v).data().storage(), x.storage());
  const Variable copied = contiguous(views[4]);
  EXPECT_NE(copied.data().storage(), x.storage());
  EXPECT_TRUE(copied.data().is_contiguous());
  EXPECT_TRUE(allclose(copied.data(), views[4].data(), 0, 0));
}

// ---- concat / split / chunk / stack ----

TEST(JoinOps, ConcatSplitRoundTrip) {
  const Tensor x = random_tensor({3, 7, 2}, 5);
  for (int64_t axis : {1, -2}) {
    const std::vector<Variable> parts = split(Variable(x), {2, 0, 4, 1}, axis);
    ASSERT_EQ(parts.size(), 4u);
    EXPECT_EQ(parts[0].shape(), (Shape{3, 2, 2}));
    EXPECT_EQ(parts[1].shape(), (Shape{3, 0, 2}));
    EXPECT_EQ(parts[2].shape(), (Shape{3, 4, 2}));
    EXPECT_EQ(parts[3].shape(), (Shape{3, 1, 2}));
    EXPECT_TRUE(allclose(parts[2].data(),
                         map_elements(x, {3, 4, 2},
                                      [](const std::vector<int64_t>& i) {
                                        return std::vector<int64_t>{i[0], i[1] + 2, i[2]};
                                      }),
                         0, 0));
    EXPECT_TRUE(allclose(concat(parts, axis).data(), x, 0, 0));
  }
  expect_error(
      [&] {
        split(Variable(x), {2, 4}, 1);
      },
      "split: sizes [2,4] sum to 6 but dim 1 of [3,7,2] has size 7");
  expect_error(
      [] {
        concat({Variable(zeros({2, 3})), Variable(zeros({2, 4}))}, 0);
      },
      "concat: [2,3] and [2,4] differ in dim 1 (axis 0)");
}

TEST(JoinOps, ChunkUnevenLastPiece) {
  const Tensor x = random_tensor({2, 7}, 6);
  const auto sizes_of = [](const std::vector<Variable>& pieces) {
    std::vector<int64_t> sizes;
    for (const Variable& p : pieces) sizes.push_back(p.size(-1));
    return sizes;
  };
  EXPECT_EQ(sizes_of(chunk(Variable(x), 3, -1)), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(sizes_of(chunk(Variable(x), 2, 1)), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(sizes_of(chunk(Variable(x), 7, 1)), (std::vector<int64_t>(7, 1)));
  EXPECT_EQ(sizes_of(chunk(Variable(x), 10, 1)), (std::vector<int64_t>(7, 1)));
  EXPECT_EQ(sizes_of(chunk(Variable(random_tensor({6}, 1)), 4, 0)),
            (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(sizes_of(chunk(Variable(zeros({0})), 3, 0)), (std::vector<int64_t>{0, 0, 0}));
  const std::vector<Variable> pieces = chunk(Variable(x), 3, 1);
  EXPECT_TRUE(allclose(pieces[2].data(),
                       map_elements(x, {2, 1},
                                    [](const std::vector<int64_t>& i) {
                                      return std::vector<int64_t>{i[0], 6};
                                    }),
                       0, 0));
  expect_error([&] { chunk(Variable(x), 0, 1); }, "chunk: number of chunks must be positive");
}

TEST(JoinOps, StackAddsANewDim) {
  const Tensor a = random_tensor({2, 3}, 7);
  const Tensor b = random_tensor({2, 3}, 8);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    const int64_t na = axis < 0 ? axis + 3 : axis;
    Shape shape = {2, 3};
    shape.insert(shape.begin() + na, 2);
    Tensor expected = zeros(shape, DType::kF64);
    for_each_index(shape, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src = i;
      src.erase(src.begin() + na);
      expected.set(i, (i[na] == 0 ? a : b).at(src));
    });
    EXPECT_TRUE(allclose(stack({Variable(a), Variable(b)}, axis).data(), expected, 0, 0))
        << "axis " << axis;
  }
  expect_error(
      [] {
        stack({Variable(zeros({2, 3})), Variable(zeros({3, 2}))}, 0);
      },
      "stack: [2,3] and [3,2] differ (inputs 0 and 1)");
}

// ---- gradients ----

struct GradCase {
  std::string name;
  Shape shape;  // 3-D input shape
  std::function<Variable(const Variable&)> op;
};

std::vector<GradCase> grad_cases() {
  return {
      {"reshape",
       {2, 3, 4},
       [](const Variable& x) {
         return reshape(x, {4, -1});
       }},
      {"flatten", {2, 3, 4}, [](const Variable& x) { return flatten(x, -2); }},
      {"permute",
       {2, 3, 4},
       [](const Variable& x) {
         return permute(x, {-1, 0, 1});
       }},
      {"transpose", {2, 3, 4}, [](const Variable& x) { return transpose(x, -1, -3); }},
      {"slice", {2, 5, 4}, [](const Variable& x) { return slice(x, -2, 1, 5, 2); }},
      {"slice_last_dim", {2, 3, 7}, [](const Variable& x) { return slice(x, 2, -6, -1, 3); }},
      {"narrow", {4, 3, 2}, [](const Variable& x) { return narrow(x, 0, 1, 2); }},
      {"expand",
       {2, 1, 4},
       [](const Variable& x) {
         return expand(x, {3, 2, 5, 4});
       }},
      {"unsqueeze", {2, 3, 4}, [](const Variable& x) { return unsqueeze(x, -2); }},
      {"squeeze", {2, 1, 4}, [](const Variable& x) { return squeeze(x, -2); }},
      {"squeeze_all", {3, 1, 2}, [](const Variable& x) { return squeeze(x); }},
      {"contiguous", {2, 3, 4}, [](const Variable& x) { return contiguous(x); }},
      // A view on top of a view: both backwards compose.
      {"slice_of_transpose",
       {3, 4, 2},
       [](const Variable& x) { return slice(transpose(x, 0, 1), 0, 1, 4); }},
      // The same input used twice through views: gradients accumulate.
      {"two_views",
       {2, 3, 3},
       [](const Variable& x) { return transpose(x, 1, 2) * narrow(x, 1, 0, 3); }},
  };
}

class ShapeGradTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(ShapeGradTest, MatchesFiniteDifferences) {
  const GradCase& c = GetParam();
  const auto f = [&](const std::vector<Variable>& in) { return c.op(in[0]); };
  EXPECT_TRUE(gradcheck(f, {random_tensor(c.shape, 11)}));
  EXPECT_TRUE(gradcheck(f, {non_contiguous(c.shape, 12)}));
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeGradTest, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

TEST(ShapeGrad, ViewOfContiguousInput) {
  const auto f = [](const std::vector<Variable>& in) { return view(in[0], {3, 8}); };
  EXPECT_TRUE(gradcheck(f, {random_tensor({2, 3, 4}, 13)}));
  // Downstream transpose hands view's backward a non-contiguous gradient.
  const auto g = [](const std::vector<Variable>& in) {
    return contiguous(transpose(view(in[0], {6, 4}), 0, 1));
  };
  EXPECT_TRUE(gradcheck(g, {random_tensor({2, 3, 4}, 14)}));
}

TEST(ShapeGrad, ConcatOfMixedInputs) {
  const auto f = [](const std::vector<Variable>& in) { return concat({in[0], in[1], in[2]}, -2); };
  EXPECT_TRUE(gradcheck(f, {random_tensor({2, 3, 4}, 15), random_tensor({2, 1, 4}, 16),
                            non_contiguous({2, 2, 4}, 17)}));
  // An input that needs no gradient is skipped.
  Variable a(random_tensor({2, 3}, 18), true);
  Variable b(random_tensor({2, 2}, 19), false);
  concat({a, b}, 1).backward(ones({2, 5}, DType::kF64));
  EXPECT_TRUE(allclose(a.grad(), ones({2, 3}, DType::kF64)));
  EXPECT_FALSE(b.grad().defined());
}

TEST(ShapeGrad, SplitAndChunkWithUnusedOutputs) {
  // Only some pieces reach the loss: the others contribute zero gradient.
  const auto f = [](const std::vector<Variable>& in) {
    const std::vector<Variable> parts = split(in[0], {1, 2, 2}, -1);
    return parts[0] * parts[0] + narrow(parts[2], -1, 1, 1);
  };
  EXPECT_TRUE(gradcheck(f, {random_tensor({3, 2, 5}, 20)}));
  EXPECT_TRUE(gradcheck(f, {non_contiguous({3, 2, 5}, 21)}));
  const auto g = [](const std::vector<Variable>& in) {
    const std::vector<Variable> parts = chunk(in[0], 3, 0);  // 7 -> 3, 3, 1
    return concat({parts[2] * parts[2], parts[0]}, 0);
  };
  EXPECT_TRUE(gradcheck(g, {random_tensor({7, 2, 3}, 22)}));
  EXPECT_TRUE(gradcheck(g, {non_contiguous({7, 2, 3}, 23)}));
  // Exact: the gradient of split's unused piece is zero, of the used one the seed.
  Variable x(random_tensor({4, 3}, 24), true);
  const std::vector<Variable> pieces = chunk(x, 2, 0);
  pieces[1].backward(full({2, 3}, 2.0, DType::kF64));
  Tensor expected = zeros({4, 3}, DType::kF64);
  for_each_index({2, 3}, [&](const std::vector<int64_t>& i) {
    expected.set({i[0] + 2, i[1]}, 2.0);
  });
  EXPECT_TRUE(allclose(x.grad(), expected, 0, 0));
}

TEST(ShapeGrad, StackAndRoundTrips) {
  const auto f = [](const std::vector<Variable>& in) { return stack({in[0], in[1], in[0]}, -2); };
  EXPECT_TRUE(gradcheck(f, {random_tensor({2, 3}, 25), random_tensor({3, 2}, 26).transpose(0, 1)}));
  const auto g = [](const std::vector<Variable>& in) {
    return concat(split(in[0], {2, 1, 3}, 1), 1) * in[0];
  };
  EXPECT_TRUE(gradcheck(g, {non_contiguous({2, 6, 2}, 27)}));
}

TEST(ShapeGrad, NoGraphWhenNothingNeedsGrad) {
  const Variable x(random_tensor({2, 3}, 28));
  EXPECT_FALSE(transpose(x, 0, 1).requires_grad());
  EXPECT_FALSE(concat({x, x}, 0).requires_grad());
  for (const Variable& p : split(x, {1, 1}, 0)) EXPECT_FALSE(p.requires_grad());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
