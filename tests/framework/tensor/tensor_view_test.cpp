// Tensor views and copies: element placement checked against independent index arithmetic.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"
#include "tests/support/expect_error.h"
#include "tests/support/index_math.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::expect_error;
using testing::for_each_index;
using testing::iota;

// Asserts t has `shape` and t[index] == expected(index) for every index.
void expect_elements(const Tensor& t, const Shape& shape,
                     const std::function<double(const std::vector<int64_t>&)>& expected) {
  ASSERT_EQ(t.shape(), shape);
  for_each_index(shape, [&](const std::vector<int64_t>& index) {
    EXPECT_EQ(t.at(index), expected(index)) << "at " << shape_str(index);
  });
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage();
}

TEST(TensorLayout, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({5}), (Strides{1}));
  EXPECT_EQ(contiguous_strides({}), (Strides{}));
  const Tensor t = Tensor::empty({2, 3, 4});
  EXPECT_EQ(t.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 24u * 4u);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(0), 2);
  expect_error([&] { t.size(3); }, {"size", "3"});
  expect_error([&] { t.size(-4); }, {"size", "-4"});
}

TEST(TensorLayout, StorageIsAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    const Tensor t = Tensor::empty({n}, DType::kBF16);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  }
}

TEST(TensorLayout, UndefinedTensor) {
  const Tensor t;
  EXPECT_FALSE(t.defined());
  expect_error([&] { t.data<float>(); }, {"undefined"});
  expect_error([&] { t.item(); }, {"undefined"});
  expect_error([&] { t.contiguous(); }, {"contiguous", "undefined"});
  EXPECT_EQ(t.to_string(), "Tensor(undefined)");
}

TEST(TensorLayout, DataChecksTheElementType) {
  const Tensor t = zeros({2}, DType::kF32);
  EXPECT_NO_THROW(t.data<float>());
  expect_error([&] { t.data<double>(); }, {"data", "f32", "f64"});
  expect_error([&] { t.data<int32_t>(); }, {"data", "f32", "i32"});
}

TEST(TensorView, ViewOfContiguousSharesStorage) {
  const Tensor base = iota({24});
  const Tensor v = base.view({2, 3, 4});
  EXPECT_TRUE(same_storage(base, v));
  EXPECT_EQ(v.strides(), (Strides{12, 4, 1}));
  expect_elements(v, {2, 3, 4}, [](const auto& i) { return 12.0 * i[0] + 4.0 * i[1] + i[2]; });
  Tensor w = v;
  w.set({1, 2, 3}, -5.0);
  EXPECT_EQ(base.at({23}), -5.0);
}

TEST(TensorView, InfersMinusOne) {
  const Tensor base = iota({24});
  EXPECT_EQ(base.view({-1, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(base.view({2, -1, 3}).shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(base.view({-1}).shape(), (Shape{24}));
  EXPECT_EQ(base.reshape({4, -1}).shape(), (Shape{4, 6}));
  expect_error([&] { base.view({-1, -1}); }, {"view", "more than one -1"});
  expect_error([&] { base.view({5, -1}); }, {"view", "[24]", "[5,-1]"});
  expect_error([&] { base.view({5, 5}); }, {"view", "[24]", "[5,5]"});
  expect_error([&] { base.reshape({7, -1}); }, {"reshape", "[24]", "[7,-1]"});
  expect_error([&] { base.view({-2, 12}); }, {"view", "negative"});
}

TEST(TensorView, ViewOfTransposedThrowsAndReshapeCopies) {
  const Tensor base = iota({2, 3});
  const Tensor t = base.transpose(0, 1);  // [3, 2], strides [1, 3]
  EXPECT_FALSE(t.is_contiguous());
  expect_error([&] { t.view({6}); }, {"view", "[3,2]", "[6]", "reshape"});
  const Tensor r = t.reshape({6});
  EXPECT_FALSE(same_storage(r, base));
  EXPECT_TRUE(r.is_contiguous());
  // r[k] = t[k / 2, k % 2] = base[k % 2, k / 2].
  expect_elements(r, {6}, [](const auto& i) { return 3.0 * (i[0] % 2) + i[0] / 2; });
  // The copy is independent of the base.
  Tensor rw = r;
  rw.set({0}, 100.0);
  EXPECT_EQ(base.at({0, 0}), 0.0);
}

TEST(TensorView, ReshapeOfContiguousIsAView) {
  const Tensor base = iota({4, 6});
  const Tensor r = base.reshape({3, 8});
  EXPECT_TRUE(same_storage(r, base));
  expect_elements(r, {3, 8}, [](const auto& i) { return 8.0 * i[0] + i[1]; });
}

TEST(TensorView, ViewOfSliceWhereLegal) {
  const Tensor base = iota({4, 6});
  // Whole rows 1..2: contiguous block at offset 6.
  const Tensor rows = base.slice(0, 1, 3);
  EXPECT_TRUE(rows.is_contiguous());
  const Tensor flat = rows.view({12});
  EXPECT_TRUE(same_storage(flat, base));
  EXPECT_EQ(flat.offset(), 6);
  expect_elements(flat, {12}, [](const auto& i) { return 6.0 + i[0]; });

  // Columns 0..2 of every row: [4, 3] strides [6, 1]. Splitting the row dim is legal,
  // merging rows and columns is not.
  const Tensor cols = base.slice(1, 0, 3);
  const Tensor split = cols.view({2, 2, 3});
  EXPECT_TRUE(same_storage(split, base));
  EXPECT_EQ(split.strides(), (Strides{12, 6, 1}));
  expect_elements(split, {2, 2, 3}, [](const auto& i) { return 6.0 * (2 * i[0] + i[1]) + i[2]; });
  const Tensor with_ones = cols.view({4, 1, 3, 1});
  EXPECT_TRUE(same_storage(with_ones, base));
  expect_elements(with_ones, {4, 1, 3, 1}, [](const auto& i) { return 6.0 * i[0] + i[2]; });
  expect_error([&] { cols.view({12}); }, {"view", "[4,3]", "[12]"});
  const Tensor copied = cols.reshape({12});
  EXPECT_FALSE(same_storage(copied, base));
  expect_elements(copied, {12}, [](const auto& i) { return 6.0 * (i[0] / 3) + i[0] % 3; });

  // Every second element of a vector: stride 2, still splittable.
  const Tensor even = iota({8}).slice(0, 0, 8, 2);
  const Tensor even2 = even.view({2, 2});
  EXPECT_EQ(even2.strides(), (Strides{4, 2}));
  expect_elements(even2, {2, 2}, [](const auto& i) { return 4.0 * i[0] + 2.0 * i[1]; });
}

TEST(TensorView, SizeOneDimsDoNotConstrainViews) {
  // [3, 1, 2] with strides [1, ?, 3]: the size-1 dim's stride is irrelevant.
  const Tensor t = iota({2, 3}).transpose(0, 1).unsqueeze(1);
  ASSERT_EQ(t.shape(), (Shape{3, 1, 2}));
  const Tensor v = t.view({3, 2});
  EXPECT_EQ(v.strides(), (Strides{1, 3}));
  expect_elements(v, {3, 2}, [](const auto& i) { return 3.0 * i[1] + i[0]; });
  expect_elements(t.view({1, 3, 1, 2, 1}), {1, 3, 1, 2, 1},
                  [](const auto& i) { return 3.0 * i[3] + i[1]; });
  expect_error([&] { t.view({6}); }, {"view"});
  // A scalar views as [1] / [1, 1] and back.
  const Tensor s = scalar_tensor(7.0);
  EXPECT_EQ(s.view({1, 1}).at({0, 0}), 7.0);
  EXPECT_EQ(s.view({1}).view({}).item(), 7.0);
  // Size-1 dims with arbitrary strides still count as contiguous.
  const Tensor odd(iota({3}).storage(), {1, 3}, {100, 1}, 0, DType::kF64);
  EXPECT_TRUE(odd.is_contiguous());
}

TEST(TensorView, ZeroElementTensors) {
  const Tensor z = zeros({0, 3});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.nbytes(), 0u);
  EXPECT_EQ(z.view({3, 0}).shape(), (Shape{3, 0}));
  EXPECT_EQ(z.view({-1, 3}).shape(), (Shape{0, 3}));
  EXPECT_EQ(z.reshape({0}).shape(), (Shape{0}));
  expect_error([&] { z.view({-1, 0}); }, {"view"});
  EXPECT_EQ(z.transpose(0, 1).shape(), (Shape{3, 0}));
  EXPECT_EQ(z.transpose(0, 1).contiguous().shape(), (Shape{3, 0}));
  EXPECT_EQ(z.transpose(0, 1).reshape({-1}).shape(), (Shape{0}));
  EXPECT_EQ(z.clone().shape(), (Shape{0, 3}));
  EXPECT_EQ(z.to(DType::kBF16).dtype(), DType::kBF16);
  EXPECT_TRUE(z.to_double_vector().empty());
  EXPECT_EQ(z.to_string(), "Tensor(f32, [0,3], [])");
  Tensor zw = z;
  zw.fill(3.0);
  zw.copy_from(zeros({0, 3}, DType::kI64));
  EXPECT_EQ(z.expand({2, 0, 3}).numel(), 0);
  EXPECT_EQ(z.unsqueeze(0).shape(), (Shape{1, 0, 3}));
  // Slices that select nothing.
  const Tensor base = iota({4, 5});
  EXPECT_EQ(base.slice(1, 3, 3).shape(), (Shape{4, 0}));
  EXPECT_EQ(base.slice(1, 4, 2).shape(), (Shape{4, 0}));
  EXPECT_EQ(base.slice(0, 7, 9).shape(), (Shape{0, 5}));
  EXPECT_EQ(base.narrow(0, 4, 0).shape(), (Shape{0, 5}));
  EXPECT_EQ(base.slice(1, 5, 5).clone().numel(), 0);
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_EQ(arange(3, 1).numel(), 0);
}

TEST(TensorView, PermuteAndTranspose) {
  const Tensor base = iota({2, 3, 4});
  // p[a, b, c] = base[b, c, a].
  const Tensor p = base.permute({2, 0, 1});
  EXPECT_TRUE(same_storage(p, base));
  EXPECT_EQ(p.strides(), (Strides{1, 12, 4}));
  expect_elements(p, {4, 2, 3}, [](const auto& i) { return 12.0 * i[1] + 4.0 * i[2] + i[0]; });
  const Tensor pn = base.permute({-1, 0, -2});
  expect_elements(pn, {4, 2, 3}, [](const auto& i) { return 12.0 * i[1] + 4.0 * i[2] + i[0]; });
  // t[a, b, c] = base[c, b, a].
  const Tensor t = base.transpose(0, -1);
  expect_elements(t, {4, 3, 2}, [](const auto& i) { return 12.0 * i[2] + 4.0 * i[1] + i[0]; });
  EXPECT_EQ(base.transpose(1, 1).strides(), base.strides());
  expect_error([&] { base.permute({0, 1}); }, {"permute", "2", "3"});
  expect_error([&] { base.permute({0, 1, 1}); }, {"permute", "repeated"});
  expect_error([&] { base.permute({0, 1, 3}); }, {"permute", "3"});
  expect_error([&] { base.transpose(0, 3); }, {"transpose", "3"});
}

// Python semantics of range(start, stop, step) over a dimension of size n, start/stop
// negative-wrapped and clamped, as the reference for slice().
std::vector<int64_t> python_slice(int64_t n, int64_t start, int64_t stop, int64_t step) {
  auto norm = [n](int64_t v) {
    if (v < 0) v += n;
    return v < 0 ? 0 : (v > n ? n : v);
  };
  std::vector<int64_t> out;
  for (int64_t i = norm(start); i < norm(stop); i += step) out.push_back(i);
  return out;
}

TEST(TensorView, SliceWithStepAndNegativeBounds) {
  const int64_t n = 10;
  const Tensor base = iota({3, n});
  for (int64_t start = -13; start <= 13; ++start) {
    for (int64_t stop = -13; stop <= 13; ++stop) {
      for (int64_t step : {1, 2, 3, 4, 11}) {
        const std::vector<int64_t> cols = python_slice(n, start, stop, step);
        const Tensor s = base.slice(1, start, stop, step);
        SCOPED_TRACE(::testing::Message()
                     << "slice(" << start << ", " << stop << ", " << step << ")");
        ASSERT_EQ(s.shape(), (Shape{3, static_cast<int64_t>(cols.size())}));
        EXPECT_TRUE(same_storage(s, base));
        for (int64_t r = 0; r < 3; ++r) {
          for (size_t k = 0; k < cols.size(); ++k) {
            EXPECT_EQ(s.at({r, static_cast<int64_t>(k)}), r * n + cols[k]);
          }
        }
      }
    }
  }
  expect_error([&] { base.slice(1, 0, 5, 0); }, {"slice", "step"});
  expect_error([&] { base.slice(1, 5, 0, -1); }, {"slice", "step"});
  expect_error([&] { base.slice(2, 0, 1); }, {"slice", "2"});
}

TEST(TensorView, SliceOfSliceComposesOffsets) {
  const Tensor base = iota({20});
  // base[3:19:2] = 3,5,...,17; then [1:-1:3] of that = 5, 11.
  const Tensor s = base.slice(0, 3, 19, 2).slice(0, 1, -1, 3);
  expect_elements(s, {2}, [](const auto& i) { return 5.0 + 6.0 * i[0]; });
  EXPECT_EQ(s.offset(), 5);
  EXPECT_EQ(s.strides(), (Strides{6}));
}

TEST(TensorView, Narrow) {
  const Tensor base = iota({4, 6});
  const Tensor n = base.narrow(1, 2, 3);
  expect_elements(n, {4, 3}, [](const auto& i) { return 6.0 * i[0] + 2 + i[1]; });
  const Tensor last = base.narrow(-1, 5, 1);
  expect_elements(last, {4, 1}, [](const auto& i) { return 6.0 * i[0] + 5; });
  expect_error([&] { base.narrow(1, 4, 3); }, {"narrow", "[4, 7)", "[4,6]"});
  expect_error([&] { base.narrow(1, -1, 2); }, {"narrow", "[4,6]"});
  expect_error([&] { base.narrow(0, 0, -1); }, {"narrow", "[4,6]"});
}

TEST(TensorView, ExpandUsesZeroStrides) {
  const Tensor col = iota({3, 1});
  const Tensor e = col.expand({2, 3, 4});
  EXPECT_TRUE(same_storage(e, col));
  EXPECT_EQ(e.strides(), (Strides{0, 1, 0}));
  EXPECT_FALSE(e.is_contiguous());
  expect_elements(e, {2, 3, 4}, [](const auto& i) { return static_cast<double>(i[1]); });
  // Writing the base shows through every broadcast copy.
  Tensor cw = col;
  cw.set({1, 0}, 42.0);
  EXPECT_EQ(e.at({1, 1, 3}), 42.0);
  EXPECT_EQ(e.at({0, 1, 0}), 42.0);
  // contiguous() materialises the broadcast.
  const Tensor c = e.contiguous();
  EXPECT_FALSE(same_storage(c, col));
  EXPECT_TRUE(c.is_contiguous());
  expect_elements(c, {2, 3, 4}, [](const auto& i) { return i[1] == 1 ? 42.0 : i[1]; });
  // Same shape keeps the strides; scalar expands anywhere.
  EXPECT_EQ(iota({2, 3}).expand({2, 3}).strides(), (Strides{3, 1}));
  EXPECT_EQ(scalar_tensor(2.0).expand({2, 2}).strides(), (Strides{0, 0}));
  EXPECT_EQ(col.expand({3, 0}).numel(), 0);
  expect_error([&] { col.expand({3, 2, 4}); }, {"expand", "[3,1]", "[3,2,4]"});
  expect_error([&] { col.expand({3, -1}); }, {"expand", "[3,1]", "[3,-1]"});
  expect_error([&] { col.expand({-2, 3, 1}); }, {"expand", "[3,1]", "[-2,3,1]"});
  expect_error([&] { col.expand({4}); }, {"expand", "[3,1]", "[4]"});
}

TEST(TensorView, ViewOfExpandedSplitsButDoesNotMerge) {
  const Tensor e = iota({3, 1}).expand({3, 4});  // strides [1, 0]
  // Splitting the broadcast dim keeps zero strides: v[a, b, c] = base[a].
  const Tensor v = e.view({3, 2, 2});
  EXPECT_EQ(v.strides(), (Strides{1, 0, 0}));
  expect_elements(v, {3, 2, 2}, [](const auto& i) { return static_cast<double>(i[0]); });
  expect_error([&] { e.view({12}); }, {"view", "[3,4]", "[12]"});
  const Tensor r = e.reshape({12});
  expect_elements(r, {12}, [](const auto& i) { return static_cast<double>(i[0] / 4); });
}

TEST(TensorView, UnsqueezeAndSqueeze) {
  const Tensor base = iota({2, 3});
  const Tensor u0 = base.unsqueeze(0);
  const Tensor u1 = base.unsqueeze(1);
  const Tensor ul = base.unsqueeze(-1);
  EXPECT_EQ(u0.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(u1.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(ul.shape(), (Shape{2, 3, 1}));
  EXPECT_TRUE(u0.is_contiguous() && u1.is_contiguous() && ul.is_contiguous());
  expect_elements(u1, {2, 1, 3}, [](const auto& i) { return 3.0 * i[0] + i[2]; });
  expect_elements(ul, {2, 3, 1}, [](const auto& i) { return 3.0 * i[0] + i[1]; });
  EXPECT_EQ(u1.squeeze(1).shape(), (Shape{2, 3}));
  EXPECT_EQ(ul.squeeze(-1).strides(), (Strides{3, 1}));
  EXPECT_TRUE(same_storage(u1.squeeze(1), base));
  // Unsqueeze of a transposed view keeps elements in place.
  const Tensor tu = base.transpose(0, 1).unsqueeze(1);
  expect_elements(tu, {3, 1, 2}, [](const auto& i) { return 3.0 * i[2] + i[0]; });
  EXPECT_EQ(scalar_tensor(1.0).unsqueeze(0).shape(), (Shape{1}));
  expect_error([&] { base.squeeze(0); }, {"squeeze", "[2,3]", "size 2"});
  expect_error([&] { base.unsqueeze(3); }, {"unsqueeze", "3"});
  expect_error([&] { scalar_tensor(1.0).squeeze(0); }, {"squeeze"});
}

TEST(TensorView, WritesThroughEveryViewReachTheBase) {
  Tensor base = zeros({2, 3, 4}, DType::kF64);
  Tensor p = base.permute({1, 2, 0});
  p.set({2, 1, 1}, 1.0);  // base[1, 2, 1]
  EXPECT_EQ(base.at({1, 2, 1}), 1.0);
  Tensor s = base.slice(2, 1, 4, 2);
  s.set({0, 1, 1}, 2.0);  // base[0, 1, 3]
  EXPECT_EQ(base.at({0, 1, 3}), 2.0);
  Tensor n = base.narrow(0, 1, 1).squeeze(0).unsqueeze(-1);
  n.set({0, 0, 0}, 3.0);  // base[1, 0, 0]
  EXPECT_EQ(base.at({1, 0, 0}), 3.0);
  Tensor v = base.view({6, 4});
  v.set({5, 0}, 4.0);  // base[1, 2, 0]
  EXPECT_EQ(base.at({1, 2, 0}), 4.0);
  // fill on a strided view touches exactly the view's elements.
  Tensor col = base.slice(2, 2, 3);
  col.fill(-1.0);
  for_each_index({2, 3, 4}, [&](const auto& i) {
    if (i[2] == 2) {
      EXPECT_EQ(base.at(i), -1.0);
    }
  });
  EXPECT_EQ(base.at({0, 0, 0}), 0.0);
  EXPECT_EQ(base.at({1, 2, 1}), 1.0);
}

// Storage offsets of t's elements in row-major order. t must be a view of iota() storage,
// so each element's value is its own storage position.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : t.to_double_vector()) out.push_back(static_cast<int64_t>(v));
  return out;
}

// Brute force: a tensor whose elements sit at `offsets` (row-major) can be viewed as `shape`
// iff some strides reproduce every offset. The strides are forced by the elements that are
// one step along a single dim, so computing them and checking all elements decides it.
bool viewable(const std::vector<int64_t>& offsets, const Shape& shape) {
  if (offsets.empty()) return true;
  const Strides unit = contiguous_strides(shape);  // row-major linear index of a multi-index
  Strides strides(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > 1) strides[d] = offsets[unit[d]] - offsets[0];
  }
  bool ok = true;
  for_each_index(shape, [&](const std::vector<int64_t>& index) {
    int64_t linear = 0;
    int64_t off = offsets[0];
    for (size_t d = 0; d < shape.size(); ++d) {
      linear += index[d] * unit[d];
      off += index[d] * strides[d];
    }
    ok = ok && offsets[linear] == off;
  });
  return ok;
}

// A random shape with `numel` elements: its prime factors spread over 1-4 dims, plus 1s.
Shape random_factorization(int64_t numel, Generator& gen) {
  std::vector<int64_t> primes;
  for (int64_t n = numel, p = 2; n > 1;) {
    if (n % p == 0) {
      primes.push_back(p);
      n /= p;
    } else {
      ++p;
    }
  }
  Shape shape(1 + gen.next_below(4), 1);
  for (int64_t p : primes) shape[gen.next_below(shape.size())] *= p;
  if (gen.next_below(3) == 0) shape.insert(shape.begin() + gen.next_below(shape.size() + 1), 1);
  return shape;
}

TEST(TensorView, RandomViewChainsAgainstBruteForce) {
  // Random chains of view ops on iota storage; then view/reshape/contiguous to random shapes.
  // view must succeed exactly when the brute-force search says a view exists.
  Generator gen(2718);
  int views = 0;
  int refusals = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Tensor t = iota({360}).view(random_factorization(360, gen));
    for (int step = 0, steps = static_cast<int>(gen.next_below(5)); step < steps; ++step) {
      const int64_t d = t.dim() > 0 ? static_cast<int64_t>(gen.next_below(t.dim())) : 0;
      switch (gen.next_below(5)) {
        case 0:
          if (t.dim() >= 2) t = t.transpose(d, static_cast<int64_t>(gen.next_below(t.dim())));
          break;
        case 1:
          if (t.dim() >= 1 && t.size(d) > 1) {
            const int64_t start = static_cast<int64_t>(gen.next_below(t.size(d) / 2 + 1));
            t = t.slice(d, start, t.size(d), 1 + static_cast<int64_t>(gen.next_below(2)));
          }
          break;
        case 2:
          t = t.unsqueeze(static_cast<int64_t>(gen.next_below(t.dim() + 1)));
          break;
        case 3:
          if (t.dim() >= 1 && t.size(d) == 1) {
            Shape target = t.shape();
            target[d] = 1 + static_cast<int64_t>(gen.next_below(3));
            t = t.expand(target);
          }
          break;
        default:
          if (t.dim() >= 1 && t.size(d) == 1) t = t.squeeze(d);
          break;
      }
    }
    const std::vector<int64_t> offsets = element_offsets(t);
    // is_contiguous / contiguous() against the brute-force definition.
    bool dense = true;
    for (size_t k = 0; k < offsets.size(); ++k)
      dense = dense && offsets[k] == offsets[0] + int64_t(k);
    ASSERT_EQ(t.is_contiguous(), dense) << shape_str(t.shape()) << " " << shape_str(t.strides());
    ASSERT_EQ(t.contiguous().storage() == t.storage(), dense);

    const Shape target = random_factorization(t.numel(), gen);
    const std::vector<double> values = t.to_double_vector();
    const bool can_view = viewable(offsets, target);
    SCOPED_TRACE(::testing::Message() << shape_str(t.shape()) << " strides "
                                      << shape_str(t.strides()) << " -> " << shape_str(target));
    if (can_view) {
      ++views;
      const Tensor v = t.view(target);
      ASSERT_EQ(v.shape(), target);
      ASSERT_EQ(v.storage(), t.storage());
      ASSERT_EQ(v.to_double_vector(), values);
    } else {
      ++refusals;
      ASSERT_THROW(t.view(target), Error);
    }
    const Tensor r = t.reshape(target);
    ASSERT_EQ(r.to_double_vector(), values);
    ASSERT_EQ(r.storage() == t.storage(), can_view);
  }
  // Both outcomes must be well represented for the test to mean anything.
  EXPECT_GT(views, 300);
  EXPECT_GT(refusals, 300);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
