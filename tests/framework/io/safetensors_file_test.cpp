// SafetensorsFile: tensors read one at a time and widened to float32; half precision by hand.
#include "framework/io/safetensors_file.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/io/safetensors.h"
#include "framework/tensor/random.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using ::rota::testing::expect_error;
using testing::TempDir;
using testing::write_bytes;

TEST(HalfToFloat, ValuesOfTheIeeeLayoutDerivedByHand) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);                      // exponent 15 = bias, mantissa 0
  EXPECT_EQ(half_to_float(0xC000), -2.0f);                     // sign, exponent 16
  EXPECT_EQ(half_to_float(0x3555), 0.25f + 341.0f / 4096.0f);  // 2^-2 · (1 + 0x155/2^10)
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);                  // the largest finite half
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));     // the smallest normal
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));     // the smallest subnormal
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));  // the largest subnormal
  EXPECT_EQ(half_to_float(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
}

/// A safetensors file as another writer would make it: header {name: F16 [n]} and the bits.
std::string f16_file(const std::vector<uint16_t>& bits) {
  const std::string header = "{\"h\":{\"dtype\":\"F16\",\"shape\":[" + std::to_string(bits.size()) +
                             "],\"data_offsets\":[0," + std::to_string(2 * bits.size()) + "]}}";
  const uint64_t size = header.size();
  std::string out(reinterpret_cast<const char*>(&size), 8);
  out += header;
  out.append(reinterpret_cast<const char*>(bits.data()), 2 * bits.size());
  return out;
}

TEST(SafetensorsFile, ReadsEveryFloatDtypeAsFloat32OneTensorAtATime) {
  TempDir dir;
  Generator gen(3);
  const Tensor f32 = randn({3, 5}, gen);
  const Tensor f64 = randn({4}, gen, 0, 1, DType::kF64);
  const Tensor bf16 = randn({2, 3}, gen).to(DType::kBF16);
  save_safetensors(dir / "w.safetensors", NamedTensors{{"a", f32}, {"b", f64}, {"c", bf16}});
  const SafetensorsFile file(dir / "w.safetensors");
  ASSERT_EQ(file.entries().size(), 3u);
  EXPECT_EQ(file.find("b")->shape, (Shape{4}));
  EXPECT_EQ(file.find("zz"), nullptr);
  EXPECT_EQ(file.metadata().at("format"), "rota");
  EXPECT_EQ(file.read_f32(*file.find("a")).to_double_vector(), f32.to_double_vector());
  const std::vector<double> wide = f64.to_double_vector();
  const std::vector<double> read = file.read_f32(*file.find("b")).to_double_vector();
  for (size_t i = 0; i < wide.size(); ++i)
    EXPECT_EQ(read[i], static_cast<double>(static_cast<float>(wide[i])));
  EXPECT_EQ(file.read_f32(*file.find("c")).to_double_vector(), bf16.to_double_vector());  // exact
  std::vector<float> into(15);
  file.read_f32(*file.find("a"), into);
  EXPECT_EQ(static_cast<double>(into[7]), f32.to_double_vector()[7]);
  std::vector<float> wrong(14);
  expect_error([&] { file.read_f32(*file.find("a"), wrong); }, {"'a'", "15 values, 14 asked for"});

  write_bytes(dir / "h.safetensors", f16_file({0x3C00, 0xC000, 0x0001}));
  const SafetensorsFile half(dir / "h.safetensors");
  EXPECT_EQ(half.read_f32(half.entries()[0]).to_double_vector(),
            (std::vector<double>{1.0, -2.0, std::ldexp(1.0, -24)}));
}

TEST(SafetensorsFile, RefusesIntegersTruncationAndBrokenHeaders) {
  TempDir dir;
  save_safetensors(dir / "i.safetensors", NamedTensors{{"ids", zeros({4}, DType::kI64)}});
  const SafetensorsFile ints(dir / "i.safetensors");
  expect_error([&] { ints.read_f32(ints.entries()[0]); }, {"'ids'", "I64", "floating-point"});
  // A file cut short: the header's offsets run past the data.
  const std::string whole = f16_file({1, 2, 3, 4});
  write_bytes(dir / "cut.safetensors", whole.substr(0, whole.size() - 2));
  expect_error([&] { SafetensorsFile{dir / "cut.safetensors"}; }, {"cut.safetensors", "truncated"});
  write_bytes(dir / "short.safetensors", "abc");
  expect_error([&] { SafetensorsFile{dir / "short.safetensors"}; }, {"shorter than the 8-byte"});
  std::string huge(8, '\0');
  const uint64_t length = uint64_t{1} << 40;
  std::memcpy(huge.data(), &length, 8);
  write_bytes(dir / "huge.safetensors", huge + "{}");
  expect_error([&] { SafetensorsFile{dir / "huge.safetensors"}; }, {"runs past the end"});
  expect_error([&] { SafetensorsFile{dir / "absent.safetensors"}; }, {"cannot open"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
