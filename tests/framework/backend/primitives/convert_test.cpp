// f32 → bf16 array conversion: bit for bit the scalar float_to_bf16 over every sign/exponent/
// upper-mantissa pattern with the rounding-relevant lower halves (ties, NaN payloads, inf).
#include "framework/backend/primitives/convert.h"

#include <bit>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/cpu/vector_math.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/reduce.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

// Every sign/exponent/upper-mantissa pattern, each with the lower halves around the rounding
// points: exact, just below/at/above the tie, max (NaN payloads and infinities included).
std::vector<float> rounding_inputs() {
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xbfff, 0xffff};
  std::vector<float> src;
  for (uint32_t high = 0; high <= 0xffff; ++high) {
    for (uint32_t low : lows) src.push_back(std::bit_cast<float>((high << 16) | low));
  }
  return src;
}

namespace vm = backend::vecmath;

// The instruction-set builds this CPU runs.
std::vector<vm::Isa> supported_builds() {
  std::vector<vm::Isa> isas;
  for (vm::Isa isa : {vm::Isa::kPortable, vm::Isa::kAvx2, vm::Isa::kAvx512}) {
    if (vm::isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

// kernel(src, dst, count) over all of src in three calls: a body with an odd start and length
// (the vector loop's head and tail take part), then the first three and the last two elements.
template <typename Out, typename Kernel>
void run_in_three_parts(const std::vector<float>& src, std::vector<Out>& dst, Kernel kernel) {
  const int64_t n = static_cast<int64_t>(src.size());
  kernel(src.data() + 3, dst.data() + 3, n - 5);
  kernel(src.data(), dst.data(), 3);
  kernel(src.data() + n - 2, dst.data() + n - 2, 2);
}

// Each instruction-set build of the rounding kernel (float_to_bf16_array runs the widest the
// CPU has, or the ROTA_MAX_CPU_ISA cap): the scalar conversion's bits, in the vector body and
// in the tails.
TEST(FloatToBf16Array, EveryBuildMatchesTheScalarConversion) {
  const std::vector<float> src = rounding_inputs();
  ASSERT_FALSE(supported_builds().empty());
  for (vm::Isa isa : supported_builds()) {
    std::vector<uint16_t> dst(src.size(), 0x5555);
    run_in_three_parts(src, dst, vm::kernels(isa).round_to_bf16);
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_EQ(dst[i], float_to_bf16(src[i]).bits)
          << vm::isa_name(isa) << std::hex << " input bits 0x" << std::bit_cast<uint32_t>(src[i]);
    }
  }
}

// The same rounding kept in f32 (round_to_bf16_value): each build gives the f32 value of the
// scalar conversion's bits, NaN payloads and infinities included, in the body and the tails.
TEST(RoundToBf16Value, EveryBuildGivesTheValueOfTheScalarConversion) {
  const std::vector<float> src = rounding_inputs();
  for (vm::Isa isa : supported_builds()) {
    std::vector<float> dst(src.size(), 1.5f);
    run_in_three_parts(src, dst, vm::kernels(isa).round_to_bf16_value);
    for (size_t i = 0; i < src.size(); ++i) {
      const uint32_t expected = static_cast<uint32_t>(float_to_bf16(src[i]).bits) << 16;
      ASSERT_EQ(std::bit_cast<uint32_t>(dst[i]), expected)
          << vm::isa_name(isa) << std::hex << " input bits 0x" << std::bit_cast<uint32_t>(src[i]);
    }
  }
}

TEST(RoundToBf16Values, EqualsRoundingToBf16AndWideningForContiguousAndStridedTensors) {
  Generator gen(6);
  const Tensor t = randn({41, 131}, gen, 0, 3);
  for (const Tensor& x : {t, t.transpose(0, 1), t.narrow(1, 5, 100)}) {
    const Tensor fast = backend::round_to_bf16_values(x);
    const Tensor reference = x.to(DType::kBF16).to(DType::kF32);
    ASSERT_EQ(fast.dtype(), DType::kF32);
    ASSERT_EQ(fast.shape(), x.shape());
    ASSERT_TRUE(fast.is_contiguous());
    const std::vector<double> got = fast.to_double_vector(), want = reference.to_double_vector();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint64_t>(got[i]), std::bit_cast<uint64_t>(want[i])) << i;
    }
  }
}

TEST(FloatToBf16Array, MatchesTheScalarConversionBitForBit) {
  const std::vector<float> src = rounding_inputs();
  std::vector<BF16> dst(src.size());
  // An odd offset and length: the vector loop's head and tail take part.
  backend::float_to_bf16_array(src.data() + 1, dst.data() + 1,
                               static_cast<int64_t>(src.size()) - 2);
  backend::float_to_bf16_array(src.data(), dst.data(), 1);
  backend::float_to_bf16_array(src.data() + src.size() - 1, dst.data() + src.size() - 1, 1);
  for (size_t i = 0; i < src.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof(bits));
    ASSERT_EQ(dst[i].bits, float_to_bf16(src[i]).bits) << std::hex << "input bits 0x" << bits;
  }
}

TEST(ToBf16, EqualsTensorToForContiguousAndStridedTensors) {
  Generator gen(4);
  const Tensor t = randn({37, 129}, gen, 0, 3);
  for (const Tensor& x : {t, t.transpose(0, 1), t.narrow(1, 3, 100)}) {
    const Tensor fast = backend::to_bf16(x);
    const Tensor reference = x.to(DType::kBF16);
    ASSERT_EQ(fast.dtype(), DType::kBF16);
    ASSERT_EQ(fast.shape(), x.shape());
    EXPECT_EQ(fast.to_double_vector(), reference.to_double_vector());
  }
}

TEST(ToBf16WithColumnSums, SameBitsAsRoundingAndColumnSumSeparately) {
  Generator gen(5);
  for (int64_t rows : {1, 63, 64, 65, 300}) {
    for (int64_t cols : {1, 7, 257}) {
      // Values spread over magnitudes so the f32 chunk sums really round.
      const Tensor x = backend::binary(backend::BinaryOp::kMul, randn({rows, cols}, gen, 0, 1),
                                       rand({rows, cols}, gen, 0, 1000));
      for (backend::Bf16Rounding rounding :
           {backend::Bf16Rounding::kToBf16, backend::Bf16Rounding::kToBf16Values}) {
        const bool values = rounding == backend::Bf16Rounding::kToBf16Values;
        const backend::Bf16WithColumnSums fused = backend::to_bf16_with_column_sums(x, rounding);
        const Tensor want = values ? backend::to_bf16(x).to(DType::kF32) : backend::to_bf16(x);
        ASSERT_EQ(fused.values.dtype(), values ? DType::kF32 : DType::kBF16);
        EXPECT_EQ(fused.values.to_double_vector(), want.to_double_vector())
            << rows << "x" << cols << " values " << values;
        EXPECT_EQ(fused.column_sums.to_double_vector(),
                  backend::reduce_sum(x, {0}, false).to_double_vector())
            << rows << "x" << cols << " values " << values;
        EXPECT_EQ(fused.column_sums.shape(), Shape({cols}));
      }
    }
  }
}

TEST(ToBf16WithColumnSums, RefusesWhatItCannotRead) {
  Generator gen(6);
  const Tensor x = randn({8, 4}, gen);
  EXPECT_THROW(backend::to_bf16_with_column_sums(x.transpose(0, 1)), Error);
  EXPECT_THROW(backend::to_bf16_with_column_sums(x.to(DType::kF64)), Error);
  EXPECT_THROW(backend::to_bf16_with_column_sums(x.reshape({2, 4, 4})), Error);
  EXPECT_THROW(backend::to_bf16_with_column_sums(x, backend::Bf16Rounding::kNone), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
