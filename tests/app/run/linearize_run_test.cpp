// Linearisation end to end: a softmax teacher, attention transfer (only the attention moves, the
// transfer loss falls and is logged per block, resume is bit-exact, a grouped-query teacher
// works), then stage 2 as an ordinary fine-tune with adapters; and the refusals.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/run/exit_codes.h"
#include "app/run/train_run.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/nn/lora.h"
#include "recipes/recipe_error.h"
#include "tests/app/run/quiet_training.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/run_metrics.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using io::testing::read_bytes;
using rota::testing::metrics_lines;
using rota::testing::TempDir;

int train(const fs::path& out, std::vector<std::string> overrides, bool resume = false,
          int64_t stop_after = 0) {
  return testing::train_quietly(
      std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb", out,
      std::move(overrides), resume, stop_after);
}

fs::path latest(const fs::path& run) {
  return testing::latest_checkpoint(run);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const std::vector<std::string> kTeacher = {"model.attention={softmax {}}",
                                           "model.position={rope {}}", "train.steps=30",
                                           "train.eval_every=30"};

std::vector<std::string> transfer(const fs::path& teacher, std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"finetune.init_from=" + teacher.string(),
                                "linearize.train_projections=true", "train.steps=30",
                                "train.eval_every=10", "train.checkpoint_every=10"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

class Linearize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ASSERT_EQ(train(teacher(), kTeacher), kExitOk);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path teacher() { return *dir_ / "teacher"; }
  static TempDir* dir_;
  TempDir tmp_;
};
TempDir* Linearize::dir_ = nullptr;

TEST_F(Linearize, TransferTrainsOnlyTheAttentionAndItsLossFallsPerBlock) {
  const fs::path student = tmp_ / "student";
  ASSERT_EQ(train(student, transfer(teacher())), kExitOk);
  const auto valid = metrics_lines(student, "valid");
  ASSERT_EQ(valid.size(), 3u);
  for (const char* key : {"transfer_mse", "transfer_mse_block0", "transfer_mse_block1", "loss"}) {
    ASSERT_TRUE(valid.front().contains(key)) << key;
  }
  EXPECT_LT(valid.back()["transfer_mse"].get<double>(),
            0.5 * valid.front()["transfer_mse"].get<double>());
  const double mean = 0.5 * (valid.back()["transfer_mse_block0"].get<double>() +
                             valid.back()["transfer_mse_block1"].get<double>());
  EXPECT_NEAR(valid.back()["transfer_mse"].get<double>(), mean, 1e-12 + 1e-9 * mean);

  // The embeddings, norms and feed-forwards are the teacher's to the bit; the attention moved.
  const io::Checkpoint t = io::load_checkpoint(latest(teacher()));
  const io::Checkpoint s = io::load_checkpoint(latest(student));
  int same = 0, moved = 0;
  for (const auto& [name, tensor] : s.model) {
    const bool attention = name.find(".attn.") != std::string::npos;
    if (!t.model.contains(name)) {
      EXPECT_TRUE(attention) << name << " is new but not part of the attention";
      continue;
    }
    if (attention) {
      moved += !same_bytes(tensor, t.model.at(name));
    } else {
      EXPECT_TRUE(same_bytes(tensor, t.model.at(name))) << name << " is frozen but changed";
      ++same;
    }
  }
  EXPECT_EQ(same, 19);
  EXPECT_EQ(moved, 16);  // q/k/v/out weights and biases of both blocks
  // The student's recipe is the teacher's model with linear attention and LRPE.
  const std::string recipe = read_bytes(student / io::kRecipeFile);
  EXPECT_NE(recipe.find("linear {"), std::string::npos);
  EXPECT_NE(recipe.find("lrpe {"), std::string::npos);
}

TEST_F(Linearize, TransferResumesBitExact) {
  const fs::path straight = tmp_ / "straight", resumed = tmp_ / "resumed";
  ASSERT_EQ(train(straight, transfer(teacher(), {"model.dropout=0.1"})), kExitOk);
  ASSERT_EQ(train(resumed, transfer(teacher(), {"model.dropout=0.1"}), false, 13), kExitOk);
  ASSERT_EQ(train(resumed, transfer(teacher(), {"model.dropout=0.1"}), true), kExitOk);
  EXPECT_TRUE(read_bytes(latest(straight) / io::kModelFile) ==
              read_bytes(latest(resumed) / io::kModelFile));
  EXPECT_TRUE(read_bytes(latest(straight) / io::kOptimizerFile) ==
              read_bytes(latest(resumed) / io::kOptimizerFile));
}

TEST_F(Linearize, AGroupedQueryTeacherAndAStageTwoWithAdapters) {
  const fs::path gqa = tmp_ / "gqa", student = tmp_ / "student", tuned = tmp_ / "tuned";
  std::vector<std::string> teacher_overrides = kTeacher;
  teacher_overrides.insert(teacher_overrides.end(), {"model.heads=4", "model.kv_heads=2"});
  ASSERT_EQ(train(gqa, teacher_overrides), kExitOk);
  ASSERT_EQ(train(student, transfer(gqa, {"linearize.train_projections=false"})), kExitOk);
  const io::Checkpoint t = io::load_checkpoint(latest(gqa));
  const io::Checkpoint s = io::load_checkpoint(latest(student));
  // k_proj [2·8, 32] became [4·8, 32], kv head ⌊h/2⌋ for head h; frozen (projections not trained).
  const Tensor& grouped = t.model.at("encoder.blocks.0.attn.k_proj.weight");
  const Tensor& full = s.model.at("encoder.blocks.0.attn.k_proj.weight");
  ASSERT_EQ(grouped.shape(), (Shape{16, 32}));
  ASSERT_EQ(full.shape(), (Shape{32, 32}));
  const std::vector<double> g = grouped.to_double_vector(), f = full.to_double_vector();
  for (int64_t h = 0; h < 4; ++h) {
    for (int64_t r = 0; r < 8 * 32; ++r) ASSERT_EQ(f[h * 256 + r], g[(h / 2) * 256 + r]);
  }
  const auto valid = metrics_lines(student, "valid");
  EXPECT_LT(valid.back()["transfer_mse"].get<double>(),
            valid.front()["transfer_mse"].get<double>());
  // Stage 2: the linearised model fine-tuned on the language-model loss with adapters.
  ASSERT_EQ(train(tuned, {"finetune.init_from=" + student.string(), "finetune.lora.rank=4",
                          "train.steps=10", "train.eval_every=10"}),
            kExitOk);
  const auto tuned_valid = metrics_lines(tuned, "valid");
  ASSERT_EQ(tuned_valid.size(), 1u);
  EXPECT_FALSE(tuned_valid.back().contains("transfer_mse"));
  EXPECT_LT(tuned_valid.back()["loss"].get<double>(), valid.back()["loss"].get<double>());
}

TEST_F(Linearize, ATeacherFineTunedWithAdaptersTeachesItsMergedModel) {
  const fs::path adapted = tmp_ / "adapted", student = tmp_ / "student";
  ASSERT_EQ(
      train(adapted, {"model.attention={softmax {}}", "model.position={rope {}}",
                      "finetune.init_from=" + teacher().string(), "finetune.lora.rank=4",
                      "finetune.lora.targets+=q_proj", "train.steps=5", "train.eval_every=5"}),
      kExitOk);
  ASSERT_EQ(train(student, transfer(adapted, {"linearize.train_projections=false", "train.steps=3",
                                              "train.eval_every=3"})),
            kExitOk);
  StateDict merged = io::load_checkpoint(latest(adapted)).model;
  EXPECT_EQ(nn::merge_lora_adapters(merged, 16.0 / 4.0).size(), 2u);
  const io::Checkpoint s = io::load_checkpoint(latest(student));
  // The projections did not train: they are the teacher's merged ones, not its base's.
  for (const char* name :
       {"encoder.blocks.0.attn.q_proj.weight", "encoder.blocks.1.attn.q_proj.weight",
        "encoder.blocks.1.ffn.fc1.weight"}) {
    EXPECT_TRUE(same_bytes(s.model.at(name), merged.at(name))) << name;
  }
  const io::Checkpoint base = io::load_checkpoint(latest(teacher()));
  EXPECT_FALSE(same_bytes(s.model.at("encoder.blocks.0.attn.q_proj.weight"),
                          base.model.at("encoder.blocks.0.attn.q_proj.weight")));
}

TEST_F(Linearize, AHedgehogFeatureMapIsFittedWithTheProjectionsFrozen) {
  const fs::path student = tmp_ / "hedgehog";
  ASSERT_EQ(train(student, transfer(teacher(), {"model.attention.linear.feature_map=HEDGEHOG",
                                                "model.position={none {}}",
                                                "linearize.train_projections=false"})),
            kExitOk);
  const auto valid = metrics_lines(student, "valid");
  EXPECT_LT(valid.back()["transfer_mse"].get<double>(),
            0.7 * valid.front()["transfer_mse"].get<double>());
  const io::Checkpoint t = io::load_checkpoint(latest(teacher()));
  const io::Checkpoint s = io::load_checkpoint(latest(student));
  // Only the feature maps and the attention norms moved; the projections are the teacher's.
  const Tensor& w = s.model.at("encoder.blocks.0.attn.feature_map.weight");
  EXPECT_EQ(w.shape(), (Shape{2, 16, 16}));
  double off_identity = 0;
  const std::vector<double> values = w.to_double_vector();
  for (int64_t i = 0; i < 16; ++i) {
    for (int64_t j = 0; j < 16; ++j) off_identity += std::abs(values[i * 16 + j] - (i == j));
  }
  EXPECT_GT(off_identity, 1e-3);
  for (const char* name :
       {"encoder.blocks.0.attn.q_proj.weight", "encoder.blocks.1.attn.k_proj.bias",
        "encoder.blocks.1.ffn.fc2.weight"}) {
    EXPECT_TRUE(same_bytes(s.model.at(name), t.model.at(name))) << name;
  }
}

// The memory check counts the teacher too: a budget the student's training alone fits in, but
// not with the teacher's weights and forward pass, is refused before the teacher is loaded.
TEST_F(Linearize, TheMemoryBudgetCountsTheTeacher) {
  const auto dry = [&](int64_t budget) {
    TrainRequest args;
    args.recipe = std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb";
    args.out = (tmp_ / "dry").string();
    args.overrides = transfer(teacher());
    args.dry_run = true;
    args.max_memory = budget;
    args.progress = ProgressMode::kNone;
    ::testing::internal::CaptureStdout();
    try {
      const int code = run_training(args);
      return std::make_pair(code, ::testing::internal::GetCapturedStdout());
    } catch (const std::exception& e) {
      ::testing::internal::GetCapturedStdout();
      return std::make_pair(-1, std::string(e.what()));
    }
  };
  const auto [code, out] = dry(0);
  ASSERT_EQ(code, kExitOk) << out;
  // "memory (estimate): 884 KB = ..." (the student's training).
  const size_t at = out.find("memory (estimate): ");
  ASSERT_NE(at, std::string::npos) << out;
  const double kb = std::stod(out.substr(at + 19));
  ASSERT_NE(out.find(" KB = ", at), std::string::npos) << out;
  const auto [refused, message] = dry(static_cast<int64_t>(kb * 1024 * 1.02));
  EXPECT_NE(refused, kExitOk);
  EXPECT_NE(message.find("attention transfer (the student's training and the teacher's forward"),
            std::string::npos)
      << message;
  EXPECT_EQ(dry(static_cast<int64_t>(kb * 1024 * 3)).first, kExitOk);
}

TEST_F(Linearize, RefusesWhatItCannotDo) {
  const auto message_of = [&](const fs::path& out, std::vector<std::string> overrides) {
    try {
      train(out, overrides);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::string m = message_of(tmp_ / "a", {"linearize.train_projections=true"});
  EXPECT_NE(m.find("linearize: needs finetune.init_from"), std::string::npos) << m;
  m = message_of(tmp_ / "b",
                 transfer(teacher(), {"model.attention={softmax {}}", "model.position={rope {}}"}));
  EXPECT_NE(m.find("the student needs linear attention in every block"), std::string::npos) << m;
  m = message_of(tmp_ / "h", transfer(teacher(), {"model.attention.linear.feature_map=HEDGEHOG"}));
  EXPECT_NE(m.find("HEDGEHOG takes no positional encoding on the features"), std::string::npos)
      << m;
  m = message_of(tmp_ / "c", transfer(teacher(), {"train.carry_state=true"}));
  EXPECT_NE(m.find("remove train.carry_state"), std::string::npos) << m;
  // A linear-attention run is no teacher.
  const fs::path linear = tmp_ / "linear";
  ASSERT_EQ(train(linear, {"train.steps=2", "train.eval_every=2"}), kExitOk);
  m = message_of(tmp_ / "d", transfer(linear));
  EXPECT_NE(m.find("must be a causal LM with softmax attention"), std::string::npos) << m;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
