// The resume decision for a run directory, and the first line where two recipes differ.
#include "app/run/resume_policy.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

TEST(FirstDifference, NamesTheLineAndBothTexts) {
  EXPECT_EQ(first_difference("a\nb\nc\n", "a\nb\nc\n"), "");
  EXPECT_EQ(first_difference("a\nb: 1\nc\n", "a\nb: 2\nc\n"),
            "line 2: checkpoint has `b: 1`, now `b: 2`");
  EXPECT_EQ(first_difference("a\n", "a\nb\n"), "line 2: checkpoint has `(end)`, now `b`");
  EXPECT_EQ(first_difference("a\nb\n", "a\n"), "line 2: checkpoint has `b`, now `(end)`");
}

// A run recorded before a defaulted field existed has no line for it; loading both texts fills
// the default, so the run still resumes. A real change of value still differs.
TEST(SameResolvedRecipe, AMissingDefaultedFieldIsTheSameRecipeAChangedValueIsNot) {
  const std::string now = R"(version: 1
name: "x"
model { width: 16 layers: 1 heads: 2 init_scheme: PYTORCH position { lrpe {} } }
data { corpus: "tinyshakespeare" tokenizer { kind: CHAR } sequence_length: 16 batch_size: 2
       window_sampling: ALIGNED }
train { steps: 5 }
)";
  std::string older = now;
  older.replace(older.find(" init_scheme: PYTORCH"), 21, "");
  older.replace(older.find("window_sampling: ALIGNED"), 24, "");
  EXPECT_TRUE(same_resolved_recipe(older, now, "saved"));
  EXPECT_TRUE(same_resolved_recipe(now, now, "saved"));
  std::string changed = now;
  changed.replace(changed.find("ALIGNED"), 7, "RANDOM_OFFSETS");
  EXPECT_FALSE(same_resolved_recipe(now, changed, "saved"));
  EXPECT_FALSE(same_resolved_recipe("not a recipe {", now, "saved"));
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

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
