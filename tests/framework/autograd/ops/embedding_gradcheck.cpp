// embedding op: forward and scatter-add backward vs plain loops, gradcheck, determinism, errors.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/embedding.h"
#include "framework/backend/cpu/parallel.h"
#include "framework/backend/primitives/embedding.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::expect_error;
using testing::gradcheck;

// out[p, :] = weight[ids[p], :] as plain loops over the flattened ids.
Tensor reference_embedding(const Tensor& ids, const Tensor& weight) {
  const std::vector<double> id = ids.to_double_vector();
  const int64_t dim = weight.size(1);
  std::vector<double> out;
  for (double v : id) {
    for (int64_t d = 0; d < dim; ++d) out.push_back(weight.at({static_cast<int64_t>(v), d}));
  }
  Shape shape = ids.shape();
  shape.push_back(dim);
  return tensor_from(out, shape, DType::kF64);
}

// dW[ids[p], :] += g[p, :] in position order (skipping padding_idx), in g's dtype.
template <typename T>
Tensor reference_embedding_backward(const Tensor& ids, const Tensor& grad, int64_t vocab,
                                    int64_t padding_idx) {
  const std::vector<double> id = ids.to_double_vector();
  const int64_t dim = grad.size(-1);
  const std::vector<double> g = grad.to_double_vector();
  std::vector<T> dw(vocab * dim, T(0));
  for (size_t p = 0; p < id.size(); ++p) {
    const int64_t row = static_cast<int64_t>(id[p]);
    if (row == padding_idx) continue;
    for (int64_t d = 0; d < dim; ++d) dw[row * dim + d] += static_cast<T>(g[p * dim + d]);
  }
  return tensor_from(std::vector<double>(dw.begin(), dw.end()), {vocab, dim}, DTypeOf<T>::value);
}

struct EmbeddingCase {
  std::string name;
  Shape ids;
  int64_t vocab;
  int64_t dim;
  DType id_dtype;
};

std::vector<EmbeddingCase> embedding_cases() {
  return {
      {"ids_1d_i64", {5}, 7, 3, DType::kI64},
      {"ids_2d_i32", {2, 3}, 4, 5, DType::kI32},  // 6 ids over 4 rows: repeats guaranteed
      {"ids_scalar", {}, 6, 4, DType::kI64},
      {"one_row", {4}, 1, 2, DType::kI32},
  };
}

class EmbeddingTest : public ::testing::TestWithParam<EmbeddingCase> {};

TEST_P(EmbeddingTest, ForwardCopiesRows) {
  const EmbeddingCase& c = GetParam();
  Generator gen(3);
  const Tensor ids = randint(c.ids, gen, 0, c.vocab, c.id_dtype);
  for (DType dtype : {DType::kF64, DType::kF32, DType::kBF16}) {
    const Tensor weight = rand({c.vocab, c.dim}, gen, -1, 1, dtype);
    const Tensor out = embedding(ids, Variable(weight)).data();
    EXPECT_EQ(out.dtype(), dtype);
    // A row copy is exact in every dtype.
    EXPECT_TRUE(allclose(out, reference_embedding(ids, weight).to(dtype), 0.0, 0.0))
        << dtype_name(dtype);
  }
}

TEST_P(EmbeddingTest, GradientMatchesFiniteDifferences) {
  const EmbeddingCase& c = GetParam();
  Generator gen(5);
  const Tensor ids = randint(c.ids, gen, 0, c.vocab, c.id_dtype);
  const Tensor weight = rand({c.vocab, c.dim}, gen, -1, 1, DType::kF64);
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Variable>& in) { return embedding(ids, in[0]); }, {weight}));
  // A non-contiguous weight (a transposed view) takes the same path.
  const Tensor weight_t = rand({c.dim, c.vocab}, gen, -1, 1, DType::kF64).transpose(0, 1);
  EXPECT_TRUE(gradcheck([&](const std::vector<Variable>& in) { return embedding(ids, in[0]); },
                        {weight_t}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, EmbeddingTest, ::testing::ValuesIn(embedding_cases()),
                         [](const ::testing::TestParamInfo<EmbeddingCase>& info) {
                           return info.param.name;
                         });

TEST(Embedding, RepeatedIdsAccumulate) {
  const Tensor ids = tensor_from({2, 0, 2, 2, 1, 0}, {2, 3}, DType::kI64);
  Generator gen(9);
  Variable weight(rand({4, 3}, gen, -1, 1, DType::kF64), true);
  const Tensor g = randn({2, 3, 3}, gen, 0, 1, DType::kF64);
  embedding(ids, weight).backward(g);
  EXPECT_TRUE(allclose(weight.grad(), reference_embedding_backward<double>(ids, g, 4, -1), 0, 0));
  // Row 3 never appears: its gradient is exactly zero.
  for (int64_t d = 0; d < 3; ++d) EXPECT_EQ(weight.grad().at({3, d}), 0.0);
}

TEST(Embedding, PaddingRowGetsNoGradient) {
  const Tensor ids = tensor_from({1, 0, 1, 3, 0}, {5}, DType::kI32);
  Generator gen(11);
  const Tensor g = randn({5, 4}, gen, 0, 1, DType::kF64);
  for (int64_t padding : {0, -4}) {  // -4 is row 0 of 4, counted from the end as in PyTorch
    Variable weight(rand({4, 4}, gen, -1, 1, DType::kF64), true);
    const Variable out = embedding(ids, weight, padding);
    // The forward still reads the padding row (PyTorch semantics); only its gradient is cut.
    EXPECT_TRUE(allclose(out.data(), reference_embedding(ids, weight.data()), 0, 0));
    out.backward(g);
    EXPECT_TRUE(allclose(weight.grad(), reference_embedding_backward<double>(ids, g, 4, 0), 0, 0));
    for (int64_t d = 0; d < 4; ++d) EXPECT_EQ(weight.grad().at({0, d}), 0.0);
  }
}

TEST(Embedding, BackwardIsDeterministicAndParallel) {
  // 3000 positions x 70 columns is above the parallel grain: threads split the columns.
  Generator gen(13);
  const Tensor ids = randint({30, 100}, gen, 0, 50, DType::kI64);
  const Tensor g = randn({30, 100, 70}, gen, 0, 1, DType::kF32);
  const int threads = backend::num_threads();
  backend::set_num_threads(2);
  const Tensor two = backend::embedding_backward(ids, g, 50, 7);
  backend::set_num_threads(1);
  const Tensor one = backend::embedding_backward(ids, g, 50, 7);
  backend::set_num_threads(threads);
  // Each element sums its rows in position order, like the serial loop: bit-identical f32.
  const Tensor expected = reference_embedding_backward<float>(ids, g, 50, 7);
  EXPECT_TRUE(allclose(two, expected, 0, 0));
  EXPECT_TRUE(allclose(one, expected, 0, 0));
}

TEST(Embedding, ErrorsNameTheOpTheIdAndV) {
  const Variable weight(zeros({10, 4}));
  expect_error(
      [&] {
        embedding(tensor_from({1, 2, 3, 12}, {2, 2}, DType::kI64), weight);
      },
      "embedding: id 12 at position 3 of ids [2,2] is out of range for V = 10");
  expect_error([&] { embedding(tensor_from({-1}, {1}, DType::kI32), weight); },
               "embedding: id -1 at position 0 of ids [1] is out of range for V = 10");
  expect_error([&] { embedding(tensor_from({1}, {1}, DType::kF32), weight); },
               "embedding: index dtype f32 is not supported");
  expect_error([&] { embedding(tensor_from({1}, {1}, DType::kI64), weight, 10); },
               "embedding: padding_idx 10 is out of range for 10 embeddings");
  expect_error([&] { embedding(tensor_from({1}, {1}, DType::kI64), Variable(zeros({10}))); },
               "embedding: weight [10] must be [V, D]");
  expect_error(
      [] {
        backend::embedding_backward(tensor_from({1}, {1}, DType::kI64), zeros({2, 4}), 10);
      },
      "embedding_backward: grad [2,4] does not match ids [1]");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
