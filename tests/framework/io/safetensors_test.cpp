// safetensors: round trips of every dtype, the byte layout parsed independently, every refusal.
#include "framework/io/safetensors.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "framework/base/file_io.h"
#include "framework/tensor/random.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/source_tree.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

using testing::bitwise_crc32c;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

// Names in `dir` that are unfinished atomic writes (`<file>.tmp.<pid>`).
std::vector<std::string> temporary_files(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp") != std::string::npos) names.push_back(name);
  }
  return names;
}

// The raw little-endian bytes a tensor should occupy, built element by element from its values
// (not from its memory), so the check does not share the writer's memcpy.
std::string expected_bytes(const Tensor& t) {
  std::string out;
  const std::vector<double> values = t.to_double_vector();
  auto append = [&out](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  for (double v : values) {
    switch (t.dtype()) {
      case DType::kF32:
        append(static_cast<float>(v));
        break;
      case DType::kF64:
        append(v);
        break;
      case DType::kBF16:
        append(float_to_bf16(static_cast<float>(v)).bits);  // exact: v came from a bf16
        break;
      case DType::kI32:
        append(static_cast<int32_t>(v));
        break;
      case DType::kI64:
        append(static_cast<int64_t>(v));
        break;
    }
  }
  return out;
}

NamedTensors sample_tensors() {
  Generator gen(3);
  NamedTensors tensors;
  tensors.emplace_back("embed.weight", randn({5, 4}, gen, 0, 1, DType::kF32));
  tensors.emplace_back("blocks.0.norm.weight", randn({7}, gen, 0, 1, DType::kF64));
  tensors.emplace_back("half", randn({3, 2}, gen, 0, 1, DType::kF32).to(DType::kBF16));
  tensors.emplace_back("ids", randint({2, 3}, gen, -1000, 1000, DType::kI32));
  tensors.emplace_back("big_ids", randint({4}, gen, -(int64_t{1} << 40), int64_t{1} << 40));
  tensors.emplace_back("scalar", scalar_tensor(42, DType::kI64));
  tensors.emplace_back("empty", zeros({0}, DType::kF32));
  tensors.emplace_back("empty_2d", zeros({2, 0, 3}, DType::kBF16));
  // A transposed (non-contiguous) view: must be written in its logical C order.
  tensors.emplace_back("transposed", randn({3, 4}, gen).transpose(0, 1));
  return tensors;
}

TEST(Safetensors, RoundTripsEveryDtypeBitExactly) {
  TempDir dir;
  const NamedTensors tensors = sample_tensors();
  ASSERT_FALSE(tensors.back().second.is_contiguous());
  save_safetensors(dir / "t.safetensors", tensors, {{"recipe_hash", "abc"}});
  const SafetensorsContent loaded = load_safetensors(dir / "t.safetensors");

  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  size_t i = 0;
  for (const auto& [name, tensor] : loaded.tensors) {  // written order is kept
    const auto& [expected_name, expected] = tensors[i++];
    EXPECT_EQ(name, expected_name);
    EXPECT_EQ(tensor.dtype(), expected.dtype()) << name;
    EXPECT_EQ(tensor.shape(), expected.shape()) << name;
    EXPECT_TRUE(tensor.is_contiguous()) << name;
    EXPECT_EQ(expected_bytes(tensor), expected_bytes(expected)) << name;
  }
  EXPECT_EQ(loaded.metadata.at("recipe_hash"), "abc");
  EXPECT_EQ(loaded.metadata.at("format"), "rota");
  EXPECT_EQ(loaded.metadata.at("format_version"), "1");
  EXPECT_EQ(temporary_files(dir.path()), std::vector<std::string>{});
}

// In memory: the bytes the file would hold, read back by parse_safetensors; the same checks of
// names and reserved metadata keys.
TEST(Safetensors, EncodedBytesAreTheFilesBytes) {
  TempDir dir;
  const NamedTensors tensors = sample_tensors();
  save_safetensors(dir / "t.safetensors", tensors, {{"k", "v"}});
  const std::string bytes = encode_safetensors(tensors, {{"k", "v"}});
  EXPECT_TRUE(bytes == read_bytes(dir / "t.safetensors"));
  const SafetensorsContent parsed = parse_safetensors(bytes, "in memory");
  ASSERT_EQ(parsed.tensors.size(), tensors.size());
  EXPECT_EQ(parsed.metadata.at("k"), "v");
  rota::testing::expect_error(
      [&] {
        encode_safetensors(tensors, {{"format", "x"}});
      },
      "reserved for Rota");
  rota::testing::expect_error(
      [&] {
        encode_safetensors({{"a", tensors[0].second}, {"a", tensors[0].second}});
      },
      "duplicate tensor name 'a'");
}

TEST(Safetensors, StateDictOverloadAndNoTensors) {
  TempDir dir;
  StateDict state;
  state.insert("w", tensor_from({1, 2, 3}, {3}, DType::kF64));
  save_safetensors(dir / "a.safetensors", state);
  EXPECT_EQ(load_safetensors(dir / "a.safetensors").tensors.at("w").to_double_vector(),
            (std::vector<double>{1, 2, 3}));
  save_safetensors(dir / "none.safetensors", NamedTensors{});
  EXPECT_TRUE(load_safetensors(dir / "none.safetensors").tensors.empty());
}

// What a Python reader does: u64 length, JSON, offsets into the data section.
TEST(Safetensors, LayoutMatchesTheFormatWhenParsedIndependently) {
  TempDir dir;
  const NamedTensors tensors = sample_tensors();
  save_safetensors(dir / "t.safetensors", tensors);
  const std::string bytes = read_bytes(dir / "t.safetensors");

  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ(n % 8, 0u) << "header must be padded to a multiple of 8";
  const std::string header_text = bytes.substr(8, n);
  EXPECT_EQ(header_text.front(), '{');
  const size_t last = header_text.find_last_not_of(' ');
  EXPECT_EQ(header_text[last], '}');  // only spaces after the JSON
  EXPECT_LT(header_text.size() - last - 1, 8u);
  const auto header = nlohmann::json::parse(header_text);
  const std::string data = bytes.substr(8 + n);

  const auto& meta = header.at("__metadata__");
  EXPECT_EQ(meta.at("format"), "rota");
  char crc_text[16];
  std::snprintf(crc_text, sizeof(crc_text), "%08x", bitwise_crc32c(data));
  EXPECT_EQ(meta.at("data_crc32c"), crc_text);

  uint64_t expected_offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const auto& entry = header.at(name);
    EXPECT_EQ(entry.at("dtype"), safetensors_dtype_name(tensor.dtype())) << name;
    EXPECT_EQ(entry.at("shape").get<std::vector<int64_t>>(), tensor.shape()) << name;
    const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
    ASSERT_EQ(offsets.size(), 2u);
    EXPECT_EQ(offsets[0], expected_offset) << name << ": tensors are packed in order";
    EXPECT_EQ(data.substr(offsets[0], offsets[1] - offsets[0]), expected_bytes(tensor)) << name;
    expected_offset = offsets[1];
  }
  EXPECT_EQ(expected_offset, data.size());
  EXPECT_EQ(std::string(safetensors_dtype_name(DType::kBF16)), "BF16");
  EXPECT_EQ(std::string(safetensors_dtype_name(DType::kI64)), "I64");
}

// ---- refusals ----

// A hand-made file: u64 length + header (padded) + data.
std::string make_file(const nlohmann::json& header, const std::string& data) {
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  return out + text + data;
}

std::string crc_hex(const std::string& data) {
  char text[16];
  std::snprintf(text, sizeof(text), "%08x", bitwise_crc32c(data));
  return text;
}

// Expects parse_safetensors to refuse `bytes` with a message naming the file and `reason`.
void expect_refused(const std::string& bytes, const std::string& reason) {
  try {
    parse_safetensors(bytes, "/runs/x/model.safetensors");
    ADD_FAILURE() << "accepted a file that should be refused for: " << reason;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("/runs/x/model.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos)
        << "expected '" << reason << "' in: " << message;
  }
}

TEST(SafetensorsRefuses, TruncatedFiles) {
  TempDir dir;
  save_safetensors(dir / "t.safetensors", sample_tensors());
  const std::string bytes = read_bytes(dir / "t.safetensors");
  expect_refused(bytes.substr(0, 5), "shorter than the 8-byte header length");
  expect_refused(bytes.substr(0, 100), "runs past the end of the file");
  expect_refused(bytes.substr(0, bytes.size() - 1), "truncated");
  // Every proper prefix is refused, whatever the cut.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_THROW(parse_safetensors(bytes.substr(0, cut), "t"), Error) << "cut at " << cut;
  }
  // And through the file API, naming the path.
  write_bytes(dir / "cut.safetensors", bytes.substr(0, bytes.size() - 3));
  rota::testing::expect_error([&] { load_safetensors(dir / "cut.safetensors"); },
                              (dir / "cut.safetensors").string());
  EXPECT_THROW(load_safetensors(dir / "missing.safetensors"), Error);
}

TEST(SafetensorsRefuses, HeaderLengthPastTheEnd) {
  std::string bytes = make_file(
      {{"a", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}, std::string(4, '\0'));
  const uint64_t huge = uint64_t{1} << 62;
  std::memcpy(bytes.data(), &huge, 8);
  expect_refused(bytes, "runs past the end of the file");
}

TEST(SafetensorsRefuses, MalformedJson) {
  std::string bytes = make_file(
      {{"a", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}, std::string(4, '\0'));
  bytes[8] = '[';  // the opening brace
  expect_refused(bytes, "malformed JSON header");
  expect_refused(make_file(nlohmann::json::array({1, 2}), ""), "not an object");
  expect_refused(make_file({{"a", 3}}, ""), "is not an object");
  expect_refused(make_file({{"a", {{"dtype", "F32"}, {"shape", {1}}}}}, std::string(4, '\0')),
                 "has no 'data_offsets'");
  expect_refused(make_file({{"a", {{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}}}},
                           std::string(4, '\0')),
                 "non-negative integer");
  expect_refused(make_file({{"__metadata__", {{"k", 1}}}}, ""), "is not a string");
}

// Found by fuzz/safetensors_fuzzer: a number too large for a double is JSON nlohmann refuses
// with out_of_range (not parse_error); it escaped as a foreign exception.
TEST(SafetensorsRefuses, NumberOutOfRangeInTheHeader) {
  for (const std::string number : {"1e999", "-1e999", "55e555555555555555555555"}) {
    std::string text = R"({"a":{"dtype":"F32","shape":[)" + number + R"(],"data_offsets":[0,4]}})";
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    const uint64_t n = text.size();
    std::memcpy(bytes.data(), &n, 8);
    expect_refused(bytes + text + std::string(4, '\0'), "malformed JSON header");
  }
}

TEST(SafetensorsRefuses, UnknownDtype) {
  expect_refused(make_file({{"a", {{"dtype", "F16"}, {"shape", {2}}, {"data_offsets", {0, 4}}}}},
                           std::string(4, '\0')),
                 "unsupported dtype 'F16'");
}

TEST(SafetensorsRefuses, OffsetsOutOfRangeOverlappingOrWrongSize) {
  const std::string data(16, '\0');
  auto entry = [](const char* dtype, std::vector<int64_t> shape, uint64_t begin, uint64_t end) {
    return nlohmann::json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", {begin, end}}};
  };
  expect_refused(make_file({{"a", entry("F32", {4}, 8, 24)}}, data), "run past the end");
  expect_refused(
      make_file({{"a", entry("F32", {3}, 0, 12)}, {"b", entry("F32", {2}, 8, 16)}}, data),
      "overlap");
  expect_refused(make_file({{"a", entry("F32", {3}, 0, 16)}}, data),
                 "but shape [3] of F32 needs 12");
  expect_refused(make_file({{"a", entry("F64", {2}, 0, 8)}}, data), "needs 16");
  expect_refused(make_file({{"a", entry("F32", {2}, 8, 0)}}, data), "end before they begin");
  expect_refused(make_file({{"a", entry("F32", {2}, 8, 16)}}, data), "belong to no tensor");
  expect_refused(make_file({{"a", entry("F32", {2}, 0, 8)}}, data), "cover only 8");
}

TEST(SafetensorsRefuses, ChecksumMismatch) {
  TempDir dir;
  save_safetensors(dir / "t.safetensors", sample_tensors());
  std::string bytes = read_bytes(dir / "t.safetensors");
  bytes[bytes.size() - 20] ^= 0x01;  // one bit of tensor data
  expect_refused(bytes, "data checksum mismatch");

  // A Rota file must carry its checksum.
  const std::string data(4, '\0');
  const nlohmann::json entry = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
  expect_refused(
      make_file({{"__metadata__", {{"format", "rota"}, {"format_version", "1"}}}, {"a", entry}},
                data),
      "without 'data_crc32c'");
  expect_refused(
      make_file({{"__metadata__",
                  {{"format", "rota"}, {"format_version", "9"}, {"data_crc32c", crc_hex(data)}}},
                 {"a", entry}},
                data),
      "format_version '9' is not supported");
}

TEST(Safetensors, ReadsFilesFromOtherWritersWithoutChecksum) {
  // As Python's safetensors would write it: no Rota metadata, keys in any order.
  std::string data;
  const float values[] = {1.5f, -2.0f};
  data.append(reinterpret_cast<const char*>(values), sizeof(values));
  const int64_t ids[] = {7};
  data.append(reinterpret_cast<const char*>(ids), sizeof(ids));
  const nlohmann::json header = {
      {"z", {{"dtype", "I64"}, {"shape", {1}}, {"data_offsets", {8, 16}}}},
      {"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
      {"__metadata__", {{"framework", "pt"}}}};
  const auto loaded = parse_safetensors(make_file(header, data), "py.safetensors");
  EXPECT_EQ(loaded.tensors.items()[0].first, "a");  // data order
  EXPECT_EQ(loaded.tensors.at("a").to_double_vector(), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(loaded.tensors.at("z").to_double_vector(), (std::vector<double>{7}));
  EXPECT_EQ(loaded.metadata.at("framework"), "pt");
  // With a matching checksum it is verified too.
  auto with_crc = header;
  with_crc["__metadata__"]["data_crc32c"] = crc_hex(data);
  EXPECT_NO_THROW(parse_safetensors(make_file(with_crc, data), "py.safetensors"));
  std::string flipped = data;
  flipped[0] ^= 0x40;
  expect_refused(make_file(with_crc, flipped), "data checksum mismatch");
}

TEST(Safetensors, WriterRefusesBadInputAndKeepsTheOldFile) {
  TempDir dir;
  const auto path = dir / "w.safetensors";
  save_safetensors(path, NamedTensors{{"a", ones({2})}});
  const std::string before = read_bytes(path);
  EXPECT_THROW(save_safetensors(path, NamedTensors{{"a", ones({2})}, {"a", ones({2})}}), Error);
  EXPECT_THROW(save_safetensors(path, NamedTensors{{"", ones({2})}}), Error);
  EXPECT_THROW(save_safetensors(path, NamedTensors{{"__metadata__", ones({2})}}), Error);
  EXPECT_THROW(save_safetensors(path, NamedTensors{{"b", Tensor()}}), Error);
  EXPECT_THROW(save_safetensors(path, NamedTensors{{"b", ones({2})}}, {{"format", "x"}}), Error);
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(temporary_files(dir.path()), std::vector<std::string>{});
}

TEST(AtomicFileWriter, AbandonedWriteLeavesTheOldContent) {
  TempDir dir;
  const auto path = dir / "f.txt";
  write_file_atomically(path, "old");
  {
    AtomicFileWriter writer(path);
    writer.write("new content that never gets committed");
    EXPECT_TRUE(std::filesystem::exists(writer.temp_path()));
    EXPECT_EQ(temporary_files(dir.path()), std::vector<std::string>{writer.temp_path().filename()});
  }
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(temporary_files(dir.path()), std::vector<std::string>{});
  write_file_atomically(path, "new");
  EXPECT_EQ(read_file(path), "new");
  EXPECT_THROW(read_file(dir / "missing"), Error);
  EXPECT_THROW(write_file_atomically(dir / "no_such_dir" / "f", "x"), Error);
}

// The documented numpy reader (tests/reference/load_safetensors.py) loads our files by name.
// Runs when python3 with numpy is installed (it is an optional tool, not a build dependency).
TEST(Safetensors, NumpyReferenceReaderLoadsOurFile) {
  // The first python3 that has numpy (a pyenv shim on PATH may lack the system's numpy).
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "python3 with numpy not available";
  TempDir dir;
  const NamedTensors tensors = sample_tensors();
  save_safetensors(dir / "model.safetensors", tensors);
  const std::string script = std::string(ROTA_SOURCE_DIR) + "/tests/reference/load_safetensors.py";
  const std::string command = python + " '" + script + "' '" +
                              (dir / "model.safetensors").string() + "' --json > '" +
                              (dir / "out.json").string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const auto loaded = nlohmann::json::parse(read_bytes(dir / "out.json"));
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    const auto& entry = loaded.at(name);
    EXPECT_EQ(entry.at("shape").get<std::vector<int64_t>>(), tensor.shape()) << name;
    EXPECT_EQ(entry.at("values").get<std::vector<double>>(), tensor.to_double_vector()) << name;
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
