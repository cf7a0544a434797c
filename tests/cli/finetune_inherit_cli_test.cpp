// Fine-tuning inherits its model: a recipe with finetune.init_from that writes only what
// changes (the kind, the classifier head, dropout) trains on the pretrained run's architecture,
// and `rota recipe show` prints the block it gets.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"
#include "tests/support/temp_dir.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

const std::string kRecipes = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/";

testing::CommandResult rota(const std::string& arguments) {
  return testing::run_command("OMP_NUM_THREADS=1 " + testing::built_rota() + " " + arguments);
}

TEST(FinetuneInheritance, AClassifierWritingOnlyItsHeadTrainsOnThePretrainedArchitecture) {
  rota::testing::TempDir dir;
  const std::string pretrained = (dir.path() / "mlm").string();
  const std::string short_run =
      " --set train.steps=2 --set train.eval_every=2 --set train.eval_batches=1";
  // A masked LM of another shape than the classifier recipe's own block (width 48, 3 layers).
  const testing::CommandResult mlm =
      rota("train " + kRecipes + "tiny_masked_lm.txtpb --out " + pretrained + short_run +
           " --set model.width=48 --set model.layers=3 --set model.ffn_width=96");
  ASSERT_EQ(mlm.code, 0) << mlm.output;

  const std::string classifier =
      kRecipes +
      "tiny_classifier.txtpb --unset model --set 'model={kind: CLASSIFIER dropout: "
      "0.2 classifier {num_classes: 2 pooling: MEAN}}' --set finetune.init_from=" +
      pretrained + " --set finetune.strictness=PARTIAL";
  const testing::CommandResult shown = rota("recipe show " + classifier);
  ASSERT_EQ(shown.code, 0) << shown.output;
  for (const char* field : {"kind: CLASSIFIER", "width: 48", "layers: 3", "ffn_width: 96",
                            "dropout: 0.2", "num_classes: 2", "lrpe {"}) {
    EXPECT_NE(shown.output.find(field), std::string::npos) << field << " not in\n" << shown.output;
  }
  EXPECT_EQ(shown.output.find("tie_embeddings"), std::string::npos) << shown.output;

  const testing::CommandResult trained =
      rota("train " + classifier + " --out " + (dir.path() / "classifier").string() + short_run);
  ASSERT_EQ(trained.code, 0) << trained.output;
  EXPECT_NE(trained.output.find("step=2"), std::string::npos) << trained.output;
  // Its saved recipe holds the inherited block, so eval and --resume rebuild the same model.
  const testing::CommandResult again =
      rota("train " + classifier + " --out " + (dir.path() / "classifier").string() + short_run +
           " --resume");
  EXPECT_EQ(again.code, 0) << again.output;
  const testing::CommandResult evaluated =
      rota("eval " + (dir.path() / "classifier").string() + " --split valid --batches 1");
  EXPECT_EQ(evaluated.code, 0) << evaluated.output;

  // Without the pretrained run there is nothing to inherit: the recipe's own (default) block
  // stands and the weights do not fit it, said by loading them.
  const testing::CommandResult missing =
      rota("train " + kRecipes +
           "tiny_classifier.txtpb --set finetune.init_from=" + (dir.path() / "nowhere").string() +
           " --out " + (dir.path() / "c2").string() + short_run);
  EXPECT_NE(missing.code, 0) << missing.output;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
