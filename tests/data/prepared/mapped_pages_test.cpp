// Windows read from a memory-mapped shard do not stay in the process's resident memory.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/dataset/token_sequence.h"
#include "framework/base/mapped_file.h"
#include "tests/data/test_files.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

// Resident memory of this process now (second field of /proc/self/statm, in pages).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// Reads every window of a 64 MiB shard of uint16 ids (in the page cache: just written) and
// returns how much the resident memory grew.
int64_t growth_reading_all_windows(bool mapped) {
  testing::TempDir dir;
  const int64_t ids = int64_t{32} << 20;  // 64 MiB of uint16
  {
    std::vector<uint16_t> values(static_cast<size_t>(ids));
    for (int64_t i = 0; i < ids; ++i) values[static_cast<size_t>(i)] = static_cast<uint16_t>(i * 7);
    std::ofstream(dir / "shard.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(values.data()), ids * 2);
  }
  auto file = std::make_shared<MappedFile>(dir / "shard.bin");
  const TokenSequence sequence(TokenWidth::kU16, {{file->data(), ids, mapped}}, file);
  const int64_t before = resident_bytes();
  std::vector<int64_t> window(257);
  int64_t checksum = 0;
  int64_t wrong = 0;
  for (int64_t start = 0; start + 257 <= ids; start += 257) {
    sequence.copy_to(start, 257, window.data());
    checksum += window[0] + window[256];
    wrong += window[1] != static_cast<uint16_t>((start + 1) * 7);
  }
  EXPECT_NE(checksum, 0);
  EXPECT_EQ(wrong, 0);
  return resident_bytes() - before;
}

TEST(MappedShard, PagesReadAreHandedBackSoResidentMemoryStaysFlat) {
  // Kept mapped, the 64 MiB would count as resident; released, almost nothing does.
  EXPECT_GT(growth_reading_all_windows(false), int64_t{48} << 20);
  EXPECT_LT(growth_reading_all_windows(true), int64_t{4} << 20);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
