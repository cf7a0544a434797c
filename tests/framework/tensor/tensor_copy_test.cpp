// Tensor copies, conversions, element access, factories and printing.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/tensor.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::expect_error;
using testing::iota;

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage();
}

const DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kBF16, DType::kI32, DType::kI64};

TEST(TensorCopy, ContiguousCopiesExactlyWhenNeeded) {
  const Tensor base = iota({4, 6});
  struct Case {
    const char* name;
    Tensor t;
    bool needs_copy;
  };
  const Case cases[] = {
      {"base", base, false},
      {"row block", base.slice(0, 1, 3), false},
      {"single row", base.narrow(0, 2, 1), false},
      {"single column", base.narrow(1, 2, 1), true},
      {"column block", base.slice(1, 1, 4), true},
      {"every other row", base.slice(0, 0, 4, 2), true},
      {"transposed", base.transpose(0, 1), true},
      {"expanded", base.narrow(0, 0, 1).expand({3, 6}), true},
      {"unsqueezed", base.unsqueeze(1), false},
      {"view", base.view({2, 12}), false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor out = c.t.contiguous();
    EXPECT_TRUE(out.is_contiguous());
    EXPECT_EQ(out.shape(), c.t.shape());
    EXPECT_EQ(same_storage(out, c.t), !c.needs_copy);
    if (!c.needs_copy) {
      EXPECT_EQ(out.offset(), c.t.offset());
    }
    EXPECT_EQ(out.to_double_vector(), c.t.to_double_vector());
  }
}

TEST(TensorCopy, ToDoubleVectorIsRowMajorOfTheView) {
  const Tensor t = iota({2, 3}).transpose(0, 1);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorCopy, CloneIsIndependent) {
  Tensor base = iota({3, 4});
  Tensor c = base.clone();
  EXPECT_FALSE(same_storage(c, base));
  EXPECT_EQ(c.to_double_vector(), base.to_double_vector());
  c.set({0, 0}, 99.0);
  EXPECT_EQ(base.at({0, 0}), 0.0);
  base.set({2, 3}, -1.0);
  EXPECT_EQ(c.at({2, 3}), 11.0);
  // Clone of a strided view is a contiguous copy of just the view.
  const Tensor v = base.slice(1, 1, 4, 2).transpose(0, 1);
  const Tensor vc = v.clone();
  EXPECT_TRUE(vc.is_contiguous());
  EXPECT_EQ(vc.offset(), 0);
  EXPECT_EQ(vc.storage()->nbytes(), 6u * sizeof(double));
  EXPECT_EQ(vc.to_double_vector(), v.to_double_vector());
  for (DType dtype : kAllDTypes) {
    const Tensor t = iota({5}, dtype);
    const Tensor tc = t.clone();
    EXPECT_EQ(tc.dtype(), dtype);
    EXPECT_EQ(tc.to_double_vector(), t.to_double_vector());
  }
}

TEST(TensorCopy, CopyFromAcrossDTypesAndStrides) {
  // Values exactly representable in every dtype (bf16 has 8 significant bits).
  const std::vector<double> values = {0, 1, -2, 3, 64, -128, 5, 6, 7, 8, 9, 10};
  for (DType src_dtype : kAllDTypes) {
    for (DType dst_dtype : kAllDTypes) {
      SCOPED_TRACE(std::string(dtype_name(src_dtype)) + " -> " + dtype_name(dst_dtype));
      const Tensor src = tensor_from(values, {3, 4}, src_dtype);
      // Destination is a transposed view into a larger buffer: [4, 3] viewed as [3, 4].
      Tensor big = full({4, 5}, -7.0, dst_dtype);
      Tensor dst = big.slice(1, 1, 4).transpose(0, 1);
      ASSERT_EQ(dst.shape(), (Shape{3, 4}));
      dst.copy_from(src);
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t c = 0; c < 5; ++c) {
          // dst[i, j] = big[j, i + 1].
          const double expected = (c >= 1 && c <= 3) ? values[(c - 1) * 4 + r] : -7.0;
          EXPECT_EQ(big.at({r, c}), expected) << r << "," << c;
        }
      }
      // Source strided too: copy a transposed source into a contiguous destination.
      Tensor dst2 = zeros({4, 3}, dst_dtype);
      dst2.copy_from(src.transpose(0, 1));
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(dst2.at({r, c}), values[c * 4 + r]);
      }
      // Expanded (zero-stride) source.
      Tensor dst3 = zeros({2, 4}, dst_dtype);
      dst3.copy_from(src.narrow(0, 1, 1).expand({2, 4}));
      for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(dst3.at({1, c}), values[4 + c]);
    }
  }
}

TEST(TensorCopy, CopyFromConvertsFloatToIntByTruncation) {
  const std::vector<double> values = {2.7, -2.7, 0.5, -0.5, 1e6 + 0.25};
  const Tensor src = tensor_from(values, {5}, DType::kF64);
  for (DType dtype : {DType::kI32, DType::kI64}) {
    Tensor dst = zeros({5}, dtype);
    dst.copy_from(src);
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(dst.at({i}), std::trunc(values[i]));
  }
}

TEST(TensorCopy, CopyFromOverlappingContiguous) {
  // Shifting a contiguous range within one buffer (memmove semantics).
  Tensor base = iota({10});
  Tensor dst = base.slice(0, 2, 10);
  dst.copy_from(base.slice(0, 0, 8));
  EXPECT_EQ(base.to_double_vector(), (std::vector<double>{0, 1, 0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(TensorCopy, CopyFromChecksShapes) {
  Tensor dst = zeros({2, 3});
  expect_error([&] { dst.copy_from(zeros({3, 2})); }, {"copy_from", "[3,2]", "[2,3]"});
  expect_error([&] { dst.copy_from(zeros({6})); }, {"copy_from", "[6]", "[2,3]"});
  expect_error([&] { dst.copy_from(Tensor()); }, {"copy_from", "undefined"});
}

TEST(TensorCopy, FillEveryDType) {
  for (DType dtype : kAllDTypes) {
    Tensor t = Tensor::empty({3, 2}, dtype);
    t.fill(5.0);
    EXPECT_EQ(t.to_double_vector(), std::vector<double>(6, 5.0)) << dtype_name(dtype);
  }
  // bf16 stores the nearest bf16 value: 1 + 2^-7 is representable, 1 + 2^-9 rounds to 1.
  Tensor b = Tensor::empty({2}, DType::kBF16);
  b.fill(1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(b.at({0}), 1.0 + std::ldexp(1.0, -7));
  b.fill(1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(b.at({1}), 1.0);
  Tensor i = Tensor::empty({1}, DType::kI32);
  i.fill(-3.9);
  EXPECT_EQ(i.item(), -3.0);
}

TEST(TensorCopy, ToRoundTrips) {
  // f32 -> f64 -> f32 is exact for any float.
  const std::vector<double> floats = {0.1f, -1.5e-30f, 3.0e38f, 1.0f / 3.0f, -0.0f, 1e-40f};
  const Tensor f = tensor_from(floats, {6}, DType::kF32);
  EXPECT_EQ(f.to(DType::kF64).to(DType::kF32).to_double_vector(), f.to_double_vector());
  EXPECT_EQ(f.to(DType::kF64).to_double_vector(), floats);
  // f64 -> f32 rounds to nearest float.
  const Tensor d = tensor_from({0.1, 1.0 / 3.0}, {2}, DType::kF64);
  const std::vector<double> rounded = d.to(DType::kF32).to_double_vector();
  EXPECT_EQ(rounded[0], static_cast<double>(0.1f));
  EXPECT_EQ(rounded[1], static_cast<double>(1.0f / 3.0f));
  // to(same dtype) is the tensor itself (no copy).
  EXPECT_TRUE(same_storage(f.to(DType::kF32), f));
  // Conversion of a strided view gives a contiguous tensor of the view.
  const Tensor t = iota({3, 4}).transpose(0, 1);
  const Tensor t32 = t.to(DType::kF32);
  EXPECT_TRUE(t32.is_contiguous());
  EXPECT_EQ(t32.to_double_vector(), t.to_double_vector());
  // bf16 -> f32 -> bf16 is exact.
  const Tensor bf = tensor_from({1.0, -2.5, 0.0078125, 3.0e38}, {4}, DType::kBF16);
  EXPECT_EQ(bf.to(DType::kF32).to(DType::kBF16).to_double_vector(), bf.to_double_vector());
}

TEST(TensorCopy, IntegerRoundTrips) {
  const double i32_min = std::numeric_limits<int32_t>::min();
  const double i32_max = std::numeric_limits<int32_t>::max();
  const Tensor a = tensor_from({i32_min, i32_max, -1, 0, 1}, {5}, DType::kI32);
  EXPECT_EQ(a.to(DType::kF64).to(DType::kI32).to_double_vector(), a.to_double_vector());
  EXPECT_EQ(a.to(DType::kI64).to(DType::kI32).to_double_vector(), a.to_double_vector());
  EXPECT_EQ(a.to_double_vector(), (std::vector<double>{i32_min, i32_max, -1, 0, 1}));
  // i64 through f64 is exact up to 2^53.
  const double big = std::ldexp(1.0, 53);
  const Tensor b = tensor_from({big, -big, big - 1}, {3}, DType::kI64);
  EXPECT_EQ(b.to(DType::kF64).to(DType::kI64).to_double_vector(), b.to_double_vector());
  // i64 -> i64 copies never pass through double: values above 2^53 survive a strided copy.
  Tensor wide = Tensor::empty({2, 2}, DType::kI64);
  int64_t* p = wide.data<int64_t>();
  p[0] = (int64_t{1} << 62) + 1;
  p[1] = std::numeric_limits<int64_t>::min();
  p[2] = std::numeric_limits<int64_t>::max();
  p[3] = -((int64_t{1} << 60) + 3);
  const Tensor wt = wide.transpose(0, 1).contiguous();
  const int64_t* q = wt.data<int64_t>();
  EXPECT_EQ(q[0], p[0]);
  EXPECT_EQ(q[1], p[2]);
  EXPECT_EQ(q[2], p[1]);
  EXPECT_EQ(q[3], p[3]);
  // i32 -> i64 widening of a strided view keeps exact values.
  Tensor n32 = Tensor::empty({2, 2}, DType::kI32);
  int32_t* r = n32.data<int32_t>();
  r[0] = std::numeric_limits<int32_t>::min();
  r[1] = 7;
  r[2] = std::numeric_limits<int32_t>::max();
  r[3] = -7;
  const Tensor w64 = n32.transpose(0, 1).to(DType::kI64);
  const int64_t* s = w64.data<int64_t>();
  EXPECT_EQ(s[0], r[0]);
  EXPECT_EQ(s[1], r[2]);
  EXPECT_EQ(s[2], r[1]);
  EXPECT_EQ(s[3], r[3]);
}

TEST(TensorAccess, ItemAtSetAndTheirErrors) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(t.at({1, 2}), 5.0);
  t.set({1, 2}, -4.5);
  EXPECT_EQ(t.at({1, 2}), -4.5);
  EXPECT_EQ(t.narrow(0, 1, 1).narrow(1, 2, 1).item(), -4.5);
  EXPECT_EQ(scalar_tensor(2.5).item(), 2.5);
  EXPECT_EQ(scalar_tensor(2.5).at({}), 2.5);
  expect_error([&] { t.item(); }, {"item", "[2,3]", "6"});
  expect_error([&] { zeros({0}).item(); }, {"item", "[0]"});
  expect_error([&] { t.at({2, 0}); }, {"at", "2", "[2,3]"});
  expect_error([&] { t.at({0, 3}); }, {"at", "3", "[2,3]"});
  expect_error([&] { t.at({-1, 0}); }, {"at", "-1", "[2,3]"});
  expect_error([&] { t.at({0}); }, {"at", "[2,3]"});
  expect_error([&] { t.at({0, 0, 0}); }, {"at", "[2,3]"});
  expect_error([&] { t.set({0, 3}, 1.0); }, {"set", "3", "[2,3]"});
  expect_error([&] { t.set({0}, 1.0); }, {"set", "[2,3]"});
  // A failed set leaves the tensor untouched.
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 1, 2, 3, 4, -4.5}));
}

TEST(TensorAccess, ElementAccessPerDType) {
  for (DType dtype : kAllDTypes) {
    Tensor t = zeros({2}, dtype);
    t.set({1}, -3.0);
    EXPECT_EQ(t.at({1}), -3.0) << dtype_name(dtype);
    EXPECT_EQ(t.at({0}), 0.0) << dtype_name(dtype);
  }
}

TEST(TensorFactories, Values) {
  EXPECT_EQ(zeros({2, 2}, DType::kI64).to_double_vector(), std::vector<double>(4, 0.0));
  EXPECT_EQ(ones({3}, DType::kBF16).to_double_vector(), std::vector<double>(3, 1.0));
  EXPECT_EQ(full({2}, -2.25, DType::kF32).to_double_vector(), std::vector<double>(2, -2.25));
  EXPECT_EQ(arange(0, 1, 0.25).to_double_vector(), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(arange(5, 0, -2, DType::kI32).to_double_vector(), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(arange(0, 3).dtype(), DType::kF32);
  expect_error([] { arange(0, 1, 0); }, {"arange", "zero"});
  const Tensor s = scalar_tensor(3.0, DType::kF64);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.shape(), Shape{});
  const Tensor like = iota({2, 3}).transpose(0, 1);
  const Tensor e = empty_like(like);
  EXPECT_EQ(e.shape(), (Shape{3, 2}));
  EXPECT_EQ(e.dtype(), DType::kF64);
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(zeros_like(like).to_double_vector(), std::vector<double>(6, 0.0));
  expect_error([] { tensor_from({1, 2, 3}, {2, 2}); }, {"tensor_from", "3", "[2,2]"});
  expect_error([] { Tensor::empty({2, -1}); }, {"empty", "[2,-1]"});
}

TEST(TensorFactories, EmptyInLayoutOfFollowsTheStrideOrder) {
  // A [B, N, H, D] tensor seen as [B, H, N, D], narrowed from a wider last-but-one dim (gaps).
  const Tensor wide = iota({2, 5, 3 * 4, 6});
  const Tensor view = wide.narrow(2, 4, 4).permute({0, 2, 1, 3});  // [2, 4, 5, 6]
  const Tensor e = empty_in_layout_of(view);
  EXPECT_EQ(e.shape(), view.shape());
  EXPECT_EQ(e.dtype(), view.dtype());
  EXPECT_FALSE(e.is_contiguous());
  EXPECT_TRUE(e.permute({0, 2, 1, 3}).is_contiguous());  // dense, no gaps, in view's order
  EXPECT_EQ(e.strides(), (Strides{5 * 4 * 6, 6, 4 * 6, 1}));
  // The last dim stays innermost even when t's is not (rows are always unit-stride).
  EXPECT_TRUE(empty_in_layout_of(iota({2, 3}).transpose(0, 1)).is_contiguous());
  // Contiguous, 1-dim and 0-dim: contiguous.
  EXPECT_TRUE(empty_in_layout_of(iota({2, 3})).is_contiguous());
  EXPECT_EQ(empty_in_layout_of(scalar_tensor(1.0)).dim(), 0);
  // Size-1 dims (equal strides) keep their order; an expanded (stride-0) dim goes outermost.
  EXPECT_TRUE(empty_in_layout_of(iota({1, 1, 4})).is_contiguous());
  const Tensor expanded = empty_in_layout_of(iota({1, 16}).expand({4, 16}));
  EXPECT_TRUE(expanded.is_contiguous());
}

TEST(TensorStorage, StatsTrackLiveAndPeakBytes) {
  reset_storage_peak();
  const StorageStats before = storage_stats();
  EXPECT_EQ(before.peak_bytes, before.live_bytes);
  {
    const Tensor a = Tensor::empty({1000}, DType::kF64);
    EXPECT_EQ(storage_stats().live_bytes, before.live_bytes + 8000);
    // Views share the storage: nothing new is allocated.
    const Tensor v = a.view({10, 100}).transpose(0, 1).slice(0, 1, 50, 3);
    EXPECT_EQ(storage_stats().live_bytes, before.live_bytes + 8000);
    const Tensor c = v.contiguous();  // [17, 10] copy
    EXPECT_EQ(storage_stats().live_bytes, before.live_bytes + 8000 + 170 * 8);
  }
  EXPECT_EQ(storage_stats().live_bytes, before.live_bytes);
  EXPECT_EQ(storage_stats().peak_bytes, before.live_bytes + 8000 + 170 * 8);
}

TEST(TensorPrinting, ToString) {
  EXPECT_EQ(tensor_from({1, 2.5, -3}, {3}).to_string(), "Tensor(f32, [3], [1, 2.5, -3])");
  EXPECT_EQ(iota({2, 2}, DType::kI64).transpose(0, 1).to_string(),
            "Tensor(i64, [2,2], [0, 2, 1, 3])");
  EXPECT_EQ(scalar_tensor(0.125, DType::kBF16).to_string(), "Tensor(bf16, [], [0.125])");
  EXPECT_EQ(iota({100}).to_string(3), "Tensor(f64, [100], [0, 1, 2, ...])");
  EXPECT_EQ(iota({3}).to_string(3), "Tensor(f64, [3], [0, 1, 2])");
  const std::string nan = tensor_from({std::nan(""), INFINITY}, {2}).to_string();
  EXPECT_NE(nan.find("nan"), std::string::npos) << nan;
  EXPECT_NE(nan.find("inf"), std::string::npos) << nan;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
