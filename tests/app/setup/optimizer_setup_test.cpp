// Recipe `optimizer` section → weight-decay policy and the optimizer's role groups.
#include "app/setup/optimizer_setup.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/model_setup.h"
#include "models/language_models.h"
#include "recipes/loader.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

constexpr char kRecipe[] = R"(version: 1
model { kind: CAUSAL_LM width: 16 layers: 1 heads: 2 ffn_width: 32 dropout: 0
        tie_embeddings: false attention { linear {} } position { lrpe { type: 2 } } }
data { corpus: "tinyshakespeare" tokenizer { kind: BYTE } sequence_length: 8 batch_size: 2 }
schedule { lr: 5e-4 }
train { steps: 1 }
)";

recipes::Recipe recipe_with(const std::vector<std::string>& overrides) {
  return recipes::load_recipe_text(kRecipe, "optimizer.txtpb", overrides);
}

TEST(WeightDecayPolicyFromRecipe, ReadsTheChosenOptimizersDecayAndTheSwitches) {
  const optim::WeightDecayPolicy defaults =
      weight_decay_policy_from_recipe(recipe_with({"optimizer.adamw.weight_decay=0.05"}));
  EXPECT_EQ(defaults.weight_decay, 0.05);
  EXPECT_FALSE(defaults.decay_biases);
  EXPECT_FALSE(defaults.decay_norms);
  EXPECT_TRUE(defaults.decay_embeddings);
  EXPECT_FALSE(defaults.decay_positional);
  const optim::WeightDecayPolicy sgd = weight_decay_policy_from_recipe(
      recipe_with({"optimizer.sgd.weight_decay=0.2", "optimizer.decay_biases=true",
                   "optimizer.decay_norms=true", "optimizer.decay_embeddings=false",
                   "optimizer.decay_positional=true"}));
  EXPECT_EQ(sgd.weight_decay, 0.2);
  EXPECT_TRUE(sgd.decay_biases);
  EXPECT_TRUE(sgd.decay_norms);
  EXPECT_FALSE(sgd.decay_embeddings);
  EXPECT_TRUE(sgd.decay_positional);
}

TEST(OptimizerFromRecipe, GroupsTheModelsParametersByRole) {
  const recipes::Recipe recipe = recipe_with({"optimizer.adamw.weight_decay=0.1"});
  Generator init(3);
  models::CausalLm model(model_options_from_recipe(recipe, 256), init, nullptr);
  const auto optimizer = optimizer_from_recipe(recipe, model);
  std::map<std::string, double> decay;
  std::map<std::string, std::vector<std::string>> names;
  for (const optim::ParamGroup& group : optimizer->param_groups()) {
    decay[group.name] = group.weight_decay;
    names[group.name] = group.param_names;
    EXPECT_EQ(group.lr, 5e-4) << group.name;
  }
  EXPECT_EQ(decay, (std::map<std::string, double>{{"weights", 0.1},
                                                  {"biases", 0.0},
                                                  {"norms", 0.0},
                                                  {"embeddings", 0.1},
                                                  {"positional", 0.0}}));
  EXPECT_EQ(names["embeddings"], std::vector<std::string>{"encoder.embed.weight"});
  const auto& positional = names["positional"];
  EXPECT_NE(
      std::find(positional.begin(), positional.end(), "encoder.blocks.0.attn.lrpe.householder_v"),
      positional.end());
  // Every trainable parameter is in exactly one group.
  size_t grouped = 0;
  for (const auto& [group, members] : names) grouped += members.size();
  EXPECT_EQ(grouped, model.parameters().size());
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
