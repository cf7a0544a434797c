// Parameter roles (nn::parameter_roles) and the role groups with their weight decay.
#include "framework/optim/parameter_groups.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/embedding.h"
#include "framework/nn/linear.h"
#include "framework/nn/norm.h"
#include "framework/nn/position/lrpe.h"
#include "framework/tensor/random.h"
#include "tests/support/expect_error.h"

namespace rota::optim {
namespace ROTA_TEST_FILE_NS {

using nn::ParameterRole;
using rota::testing::expect_error;

// A module tree with one parameter of every role, nested so that "deepest module wins" and
// "undecided modules fall back to rank" are both exercised.
class Block : public nn::Module {
 public:
  explicit Block(Generator& gen) {
    register_module("proj", std::make_shared<nn::Linear>(nn::LinearOptions{4, 4}, gen));
    register_module("norm", std::make_shared<nn::LayerNorm>(nn::NormOptions{4}));
    nn::LrpeOptions lrpe;
    lrpe.head_dim = 4;
    register_module("lrpe", std::make_shared<nn::Lrpe>(lrpe, gen));
  }
};

class Model : public nn::Module {
 public:
  explicit Model(Generator& gen) {
    nn::EmbeddingOptions embed;
    embed.num_embeddings = 10;
    embed.embedding_dim = 4;
    register_module("embed", std::make_shared<nn::Embedding>(embed, gen));
    register_module("block", std::make_shared<Block>(gen));
    register_parameter("scale", ones({4}));    // a vector no module decides: a bias
    register_parameter("head", ones({3, 4}));  // a matrix no module decides: a weight
  }
};

std::vector<std::pair<std::string, ParameterRole>> expected_roles() {
  return {{"scale", ParameterRole::kBias},
          {"head", ParameterRole::kWeight},
          {"embed.weight", ParameterRole::kEmbedding},
          {"block.proj.weight", ParameterRole::kWeight},
          {"block.proj.bias", ParameterRole::kBias},
          {"block.norm.weight", ParameterRole::kNorm},
          {"block.norm.bias", ParameterRole::kNorm},
          {"block.lrpe.theta", ParameterRole::kPositional},
          {"block.lrpe.householder_v", ParameterRole::kPositional}};
}

TEST(ParameterRoles, ModulesDecideAndRankDecidesTheRest) {
  Generator gen(1);
  Model model(gen);
  EXPECT_EQ(nn::parameter_roles(model), expected_roles());
}

TEST(ParameterRoles, FrozenParametersAreLeftOut) {
  Generator gen(1);
  Model model(gen);
  for (auto& [name, param] : model.named_parameters()) {
    if (name == "embed.weight") Variable(param).set_requires_grad(false);
  }
  std::vector<std::pair<std::string, ParameterRole>> expected = expected_roles();
  expected.erase(expected.begin() + 2);
  EXPECT_EQ(nn::parameter_roles(model), expected);
}

TEST(ParameterRoles, NamesAreTheGroupNames) {
  EXPECT_STREQ(nn::parameter_role_name(ParameterRole::kWeight), "weights");
  EXPECT_STREQ(nn::parameter_role_name(ParameterRole::kBias), "biases");
  EXPECT_STREQ(nn::parameter_role_name(ParameterRole::kNorm), "norms");
  EXPECT_STREQ(nn::parameter_role_name(ParameterRole::kEmbedding), "embeddings");
  EXPECT_STREQ(nn::parameter_role_name(ParameterRole::kPositional), "positional");
}

TEST(WeightDecayPolicy, WeightsAlwaysDecayOtherRolesByTheirSwitch) {
  WeightDecayPolicy policy;
  policy.weight_decay = 0.1;
  for (ParameterRole role : {ParameterRole::kBias, ParameterRole::kNorm, ParameterRole::kEmbedding,
                             ParameterRole::kPositional}) {
    EXPECT_EQ(policy.decay_of(role), 0.0) << nn::parameter_role_name(role);
  }
  EXPECT_EQ(policy.decay_of(ParameterRole::kWeight), 0.1);
  policy.decay_biases = true;
  EXPECT_EQ(policy.decay_of(ParameterRole::kBias), 0.1);
  policy.decay_norms = true;
  EXPECT_EQ(policy.decay_of(ParameterRole::kNorm), 0.1);
  policy.decay_embeddings = true;
  EXPECT_EQ(policy.decay_of(ParameterRole::kEmbedding), 0.1);
  policy.decay_positional = true;
  EXPECT_EQ(policy.decay_of(ParameterRole::kPositional), 0.1);
}

TEST(RoleParamGroups, OneGroupPerRoleInRoleOrderWithNamesAndDecay) {
  Generator gen(1);
  Model model(gen);
  WeightDecayPolicy policy;
  policy.weight_decay = 0.01;
  policy.decay_embeddings = true;
  const std::vector<ParamGroup> groups = role_param_groups(model, 3e-4, policy);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"weights", {"head", "block.proj.weight"}},
      {"biases", {"scale", "block.proj.bias"}},
      {"norms", {"block.norm.weight", "block.norm.bias"}},
      {"embeddings", {"embed.weight"}},
      {"positional", {"block.lrpe.theta", "block.lrpe.householder_v"}}};
  ASSERT_EQ(groups.size(), expected.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_EQ(groups[g].name, expected[g].first);
    EXPECT_EQ(groups[g].param_names, expected[g].second);
    EXPECT_EQ(groups[g].lr, 3e-4);
    const bool decays = groups[g].name == "weights" || groups[g].name == "embeddings";
    EXPECT_EQ(groups[g].weight_decay, decays ? 0.01 : 0.0) << groups[g].name;
    // The group holds the model's own parameters (same storage), in the listed order.
    ASSERT_EQ(groups[g].params.size(), groups[g].param_names.size());
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      for (const auto& [name, param] : model.named_parameters()) {
        if (name == groups[g].param_names[i]) {
          EXPECT_EQ(groups[g].params[i].data().raw_data(), param.data().raw_data()) << name;
        }
      }
    }
  }
}

TEST(RoleParamGroups, EmptyRolesAreOmittedAndAllFrozenIsAnError) {
  Generator gen(1);
  nn::Linear linear(nn::LinearOptions{2, 3, /*bias=*/false}, gen);
  const std::vector<ParamGroup> groups = role_param_groups(linear, 1e-3, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "weights");
  for (auto& [name, param] : linear.named_parameters()) Variable(param).set_requires_grad(false);
  expect_error([&] { role_param_groups(linear, 1e-3, {}); }, "no trainable parameters");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::optim
