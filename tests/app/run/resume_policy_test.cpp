// The resume decision for a run directory, and the first line where two recipes differ.
#include "app/run/resume_policy.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace rota::app {
namespace {

TEST(FirstDifference, NamesTheLineAndBothTexts) {
  EXPECT_EQ(first_difference("a\nb\nc\n", "a\nb\nc\n"), "");
  EXPECT_EQ(first_difference("a\nb: 1\nc\n", "a\nb: 2\nc\n"),
            "line 2: checkpoint has `b: 1`, now `b: 2`");
  EXPECT_EQ(first_difference("a\n", "a\nb\n"), "line 2: checkpoint has `(end)`, now `b`");
  EXPECT_EQ(first_difference("a\nb\n", "a\n"), "line 2: checkpoint has `b`, now `(end)`");
}

TEST(DecideResume, AnEmptyOrMissingDirectoryStartsFresh) {
  rota::testing::TempDir dir;
  for (bool resume : {false, true}) {
    const ResumeDecision missing = decide_resume(dir.path() / "no-run", resume, "recipe");
    EXPECT_FALSE(missing.latest);
    EXPECT_EQ(missing.refusal, "");
    const ResumeDecision empty = decide_resume(dir.path(), resume, "recipe");
    EXPECT_FALSE(empty.latest);
    EXPECT_EQ(empty.refusal, "");
  }
}

}  // namespace
}  // namespace rota::app
