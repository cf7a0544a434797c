// Byte counts as the memory messages print them: three significant digits below 100 of a unit,
// whole numbers from 100 up to the next unit (never an exponent).
#include "app/setup/memory_budget.h"

#include <gtest/gtest.h>

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

TEST(FormatBytes, ThreeDigitsOrAWholeNumberNeverAnExponent) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1 KB");
  EXPECT_EQ(format_bytes(99.7 * 1024), "99.7 KB");
  EXPECT_EQ(format_bytes(299 * 1024.0), "299 KB");
  EXPECT_EQ(format_bytes(96.4 * 1024 * 1024), "96.4 MB");
  EXPECT_EQ(format_bytes(1010.0 * 1024 * 1024), "1010 MB");
  EXPECT_EQ(format_bytes(1023.9 * 1024 * 1024), "1024 MB");
  EXPECT_EQ(format_bytes(21.4 * 1024 * 1024 * 1024), "21.4 GB");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
