// The prepare progress bar: redrawn with \r on a terminal (at most 10 times a second), only the
// final line otherwise.
#include "app/run/byte_progress.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

std::string contents(std::FILE* file) {
  std::rewind(file);
  std::string text;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file))
    text.push_back(static_cast<char>(c));
  return text;
}

TEST(ByteProgress, TerminalRedrawsTheBarAtMostTenTimesASecond) {
  std::FILE* out = std::tmpfile();
  double now = 100.0;
  ByteProgress progress("prepare", out, /*terminal=*/true, [&] { return now; });
  now = 102.0;
  progress.update(50'000'000, 200'000'000, "train");  // drawn
  now = 102.05;
  progress.update(60'000'000, 200'000'000, "train");  // within 0.1 s: skipped
  now = 104.0;
  progress.update(200'000'000, 200'000'000, "valid");  // drawn
  progress.finish(200'000'000);
  const std::string text = contents(out);
  std::fclose(out);
  EXPECT_EQ(text,
            "\rprepare [######..................] 50.0/200.0 MB  25.0 MB/s  train\x1b[K"
            "\rprepare [########################] 200.0/200.0 MB  50.0 MB/s  valid\x1b[K"
            "\nprepare: 200.0 MB in 4.0 s, 50.0 MB/s\n");
}

TEST(ByteProgress, NotATerminalPrintsOnlyTheFinalLine) {
  std::FILE* out = std::tmpfile();
  double now = 0.0;
  ByteProgress progress("prepare", out, /*terminal=*/false, [&] { return now; });
  now = 1.0;
  progress.update(1'000'000, 2'000'000, "train");
  now = 2.0;
  progress.finish(2'000'000);
  const std::string text = contents(out);
  std::fclose(out);
  EXPECT_EQ(text, "prepare: 2.0 MB in 2.0 s, 1.0 MB/s\n");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
