// TensorBoard events: TFRecord framing checked byte by byte, Event fields, protoc's raw decode.
#include "framework/io/tensorboard_writer.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "framework/base/error.h"
#include "framework/io/tensorboard_event.pb.h"
#include "framework/io/tfrecord.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using testing::bitwise_crc32c;
using testing::read_bytes;
using testing::TempDir;

uint64_t le(const std::string& bytes, size_t offset, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

uint32_t reference_mask(uint32_t crc) {
  return static_cast<uint32_t>((((crc >> 15) | (static_cast<uint64_t>(crc) << 17)) + 0xA282EAD8u) &
                               0xFFFFFFFFu);
}

TEST(TfRecord, FramingIsLengthCrcPayloadCrc) {
  for (const std::string& payload : {std::string(), std::string("x"), std::string(300, 'z')}) {
    const std::string framed = frame_tfrecord(payload);
    ASSERT_EQ(framed.size(), payload.size() + 16);
    EXPECT_EQ(le(framed, 0, 8), payload.size());
    EXPECT_EQ(le(framed, 8, 4), reference_mask(bitwise_crc32c(framed.substr(0, 8))));
    EXPECT_EQ(framed.substr(12, payload.size()), payload);
    EXPECT_EQ(le(framed, 12 + payload.size(), 4), reference_mask(bitwise_crc32c(payload)));
    EXPECT_EQ(parse_tfrecords(framed, "f"), std::vector<std::string>{payload});
  }
}

TEST(TfRecord, ReaderRefusesTruncationAndCorruption) {
  const std::string stream = frame_tfrecord("first") + frame_tfrecord("second record");
  EXPECT_EQ(parse_tfrecords(stream, "f").size(), 2u);
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    if (cut == frame_tfrecord("first").size()) continue;  // a whole first record is valid
    EXPECT_THROW(parse_tfrecords(stream.substr(0, cut), "f"), Error) << cut;
  }
  for (size_t i = 0; i < stream.size(); ++i) {
    std::string corrupted = stream;
    corrupted[i] ^= 0x01;
    EXPECT_THROW(parse_tfrecords(corrupted, "f"), Error) << "byte " << i;
  }
  rota::testing::expect_error(
      [&] {
        std::string corrupted = stream;
        corrupted[30] ^= 0x01;
        parse_tfrecords(corrupted, "events.x");
      },
      "events.x: record 1");
}

TEST(TensorBoardWriter, WritesVersionRecordThenScalarEvents) {
  TempDir dir;
  std::filesystem::path path;
  {
    TensorBoardWriter writer(dir / "run");
    path = writer.path();
    writer.add_scalar("train/loss", 3.5, 10, 1700000000.25);
    writer.add_scalars({{"valid/loss", 2.0}, {"valid/ppl", 7.389}}, 20);
    // Records are whole on disk as soon as they are written.
    EXPECT_EQ(read_tfrecords(path).size(), 3u);
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::string name = path.filename().string();
  ASSERT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - std::string(host).size()), host);
  const long seconds = std::stol(name.substr(std::string("events.out.tfevents.").size()));
  EXPECT_GT(seconds, 1600000000);

  const auto records = read_tfrecords(path);
  ASSERT_EQ(records.size(), 3u);
  tensorboard::Event first, scalar, pair;
  ASSERT_TRUE(first.ParseFromString(records[0]));
  EXPECT_EQ(first.file_version(), "brain.Event:2");
  EXPECT_NEAR(first.wall_time(), static_cast<double>(seconds), 1.0);
  ASSERT_TRUE(scalar.ParseFromString(records[1]));
  EXPECT_EQ(scalar.step(), 10);
  EXPECT_EQ(scalar.wall_time(), 1700000000.25);
  ASSERT_EQ(scalar.summary().value_size(), 1);
  EXPECT_EQ(scalar.summary().value(0).tag(), "train/loss");
  EXPECT_EQ(scalar.summary().value(0).simple_value(), 3.5f);
  ASSERT_TRUE(pair.ParseFromString(records[2]));
  ASSERT_EQ(pair.summary().value_size(), 2);
  EXPECT_EQ(pair.summary().value(1).tag(), "valid/ppl");
  EXPECT_EQ(pair.summary().value(1).simple_value(), 7.389f);
}

// protoc --decode_raw prints field numbers without any schema: this checks our field numbers
// against TensorBoard's (Event.file_version = 3, Event.summary = 5, Summary.value = 1,
// Value.tag = 1, Value.simple_value = 2). protoc is a build dependency, so it is present.
TEST(TensorBoardWriter, FieldNumbersMatchTensorBoardUnderProtocRawDecode) {
  TempDir dir;
  std::filesystem::path path;
  {
    TensorBoardWriter writer(dir.path());
    path = writer.path();
    writer.add_scalar("train/loss", 0.5, 7);
  }
  const auto records = read_tfrecords(path);
  ASSERT_EQ(records.size(), 2u);
  std::string decoded[2];
  for (int i = 0; i < 2; ++i) {
    testing::write_bytes(dir / "record.bin", records[i]);
    const std::string command = "protoc --decode_raw < '" + (dir / "record.bin").string() + "'";
    std::FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) decoded[i].append(buffer, got);
    ASSERT_EQ(::pclose(pipe), 0) << command;
  }
  EXPECT_NE(decoded[0].find("3: \"brain.Event:2\""), std::string::npos) << decoded[0];
  EXPECT_NE(decoded[1].find("2: 7"), std::string::npos) << decoded[1];
  EXPECT_NE(decoded[1].find("5 {"), std::string::npos) << decoded[1];
  EXPECT_NE(decoded[1].find("1: \"train/loss\""), std::string::npos) << decoded[1];
  EXPECT_NE(decoded[1].find("2: 0x3f000000"), std::string::npos) << decoded[1];  // 0.5f
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
