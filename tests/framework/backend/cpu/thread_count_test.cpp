// The default thread count: OMP_NUM_THREADS when it names a positive count, else the cores.
#include <gtest/gtest.h>

#include "framework/backend/cpu/parallel.h"

namespace rota::backend {
namespace ROTA_TEST_FILE_NS {

TEST(ThreadCount, FollowsOmpNumThreadsElseTheCores) {
  EXPECT_EQ(default_num_threads(nullptr, 6), 6);
  EXPECT_EQ(default_num_threads("3", 6), 3);
  EXPECT_EQ(default_num_threads("12", 2), 12);  // more than the cores: as asked
  EXPECT_EQ(default_num_threads("4,2", 6), 4);  // nested levels: the outer one
  for (const char* ignored : {"", "0", "-2", "two", "3x", " ", "99999"}) {
    EXPECT_EQ(default_num_threads(ignored, 6), 6) << "'" << ignored << "'";
  }
  EXPECT_EQ(default_num_threads(nullptr, 0), 1);
}

TEST(ThreadCount, SetNumThreadsIsWhatKernelsUse) {
  const int before = num_threads();
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(before);
  EXPECT_EQ(num_threads(), before);
  EXPECT_GE(default_num_threads(), 1);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::backend
