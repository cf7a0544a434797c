// Fine-tuning with finetune.lora end to end: only the adapters (and what must) train, checkpoints
// hold only them plus a checked reference to the base, resume is bit-exact, evaluation, export
// and a further fine-tune see the merged model, and a moved or changed base is refused.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/run/exit_codes.h"
#include "app/run/hf_export.h"
#include "app/run/train_run.h"
#include "app/setup/finetune_setup.h"
#include "app/tasks/checkpoint_task.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/safetensors.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"
#include "tests/app/run/quiet_training.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/temp_dir.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using io::testing::read_bytes;
using rota::testing::TempDir;

std::string recipe_path(const std::string& name) {
  return std::string(ROTA_SOURCE_DIR) + "/recipes/tests/" + name + ".txtpb";
}

int train(const std::string& recipe, const fs::path& out, std::vector<std::string> overrides,
          bool resume = false, int64_t stop_after = 0) {
  return testing::train_quietly(recipe_path(recipe), out, std::move(overrides), resume, stop_after);
}

fs::path latest(const fs::path& run) {
  return testing::latest_checkpoint(run);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

double loss_of(const train::Metrics& metrics) {
  for (const auto& [name, value] : metrics) {
    if (name == "loss") return value;
  }
  ADD_FAILURE() << "no loss among the metrics";
  return 0.0;
}

bool is_adapter(const std::string& name) {
  return name.ends_with(".lora_a") || name.ends_with(".lora_b");
}

std::vector<std::string> lora_overrides(const fs::path& base, std::vector<std::string> more = {}) {
  std::vector<std::string> o = {"finetune.init_from=" + base.string(),
                                "finetune.lora.rank=4",
                                "finetune.lora.alpha=8",
                                "train.steps=10",
                                "train.checkpoint_every=5",
                                "train.eval_every=10"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

// A base causal LM (10 steps) shared by the tests of this file.
class LoraRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ASSERT_EQ(train("tiny_causal_lm", base(), {"train.steps=10", "train.eval_every=10"}), kExitOk);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path base() { return *dir_ / "base"; }
  static TempDir* dir_;
  TempDir tmp_;
};
TempDir* LoraRun::dir_ = nullptr;

TEST_F(LoraRun, TrainsOnlyTheAdaptersAndCheckpointsOnlyThemWithACheckedBaseReference) {
  const fs::path run = tmp_ / "lora";
  ASSERT_EQ(train("tiny_causal_lm", run, lora_overrides(base())), kExitOk);
  const fs::path checkpoint = latest(run);
  EXPECT_EQ(checkpoint.filename(), "step_000010");

  // The file holds exactly the adapters of every attention projection of both layers.
  std::set<std::string> stored;
  for (const auto& [name, tensor] : io::load_safetensors(checkpoint / io::kModelFile).tensors) {
    stored.insert(name);
  }
  std::set<std::string> expected;
  for (int layer = 0; layer < 2; ++layer) {
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      for (const char* kind : {"lora_a", "lora_b"}) {
        expected.insert(fmt::format("encoder.blocks.{}.attn.{}.{}", layer, proj, kind));
      }
    }
  }
  EXPECT_EQ(stored, expected);

  // The state names the base step directory, its model file's size and CRC, and every tensor.
  const io::Checkpoint base_checkpoint = io::load_checkpoint(latest(base()));
  const io::TrainState state = io::decode_train_state(read_file(checkpoint / io::kStateFile), "s");
  EXPECT_EQ(state.version(), 2u);
  ASSERT_TRUE(state.has_base_weights());
  EXPECT_EQ(fs::path(state.base_weights().checkpoint()), fs::weakly_canonical(latest(base())));
  EXPECT_EQ(static_cast<size_t>(state.base_weights().names_size()), base_checkpoint.model.size());
  EXPECT_EQ(state.base_weights().frozen_size(), state.base_weights().names_size());

  // Loaded, the checkpoint is the whole model: the base's tensors bit for bit, and adapters that
  // trained (B moved off zero).
  const io::Checkpoint loaded = io::load_checkpoint(checkpoint);
  EXPECT_EQ(loaded.model.size(), base_checkpoint.model.size() + expected.size());
  for (const auto& [name, tensor] : base_checkpoint.model) {
    ASSERT_TRUE(loaded.model.contains(name)) << name;
    EXPECT_TRUE(same_bytes(loaded.model.at(name), tensor)) << name << " changed";
  }
  for (const std::string& name : expected) {
    if (!name.ends_with("lora_b")) continue;
    double largest = 0.0;
    for (double v : loaded.model.at(name).to_double_vector())
      largest = std::max(largest, std::abs(v));
    EXPECT_GT(largest, 1e-4) << name << " did not train";
  }
  // The optimizer holds state for the adapters only.
  EXPECT_LT(read_bytes(checkpoint / io::kOptimizerFile).size(),
            read_bytes(latest(base()) / io::kOptimizerFile).size() / 4);
}

TEST_F(LoraRun, ResumeIsBitExact) {
  const fs::path straight = tmp_ / "straight", resumed = tmp_ / "resumed";
  const std::vector<std::string> o = lora_overrides(base(), {"finetune.lora.dropout=0.1"});
  ASSERT_EQ(train("tiny_causal_lm", straight, o), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", resumed, o, false, 7), kExitOk);
  EXPECT_EQ(latest(resumed).filename(), "step_000007");
  ASSERT_EQ(train("tiny_causal_lm", resumed, o, true), kExitOk);
  const fs::path a = latest(straight), b = latest(resumed);
  EXPECT_EQ(b.filename(), "step_000010");
  EXPECT_TRUE(read_bytes(a / io::kModelFile) == read_bytes(b / io::kModelFile));
  EXPECT_TRUE(read_bytes(a / io::kOptimizerFile) == read_bytes(b / io::kOptimizerFile));
  // The resumed run kept its base reference.
  const io::TrainState state = io::decode_train_state(read_file(b / io::kStateFile), "s");
  EXPECT_TRUE(state.has_base_weights());
}

TEST_F(LoraRun, EvaluationExportAndAFurtherFineTuneSeeTheMergedModel) {
  const fs::path run = tmp_ / "lora";
  ASSERT_EQ(train("tiny_causal_lm", run,
                  lora_overrides(base(),
                                 {"finetune.lora.targets+=q_proj", "finetune.lora.targets+=ffn.fc1",
                                  "finetune.lora.targets+=fc2"})),
            kExitOk);
  // Export: the adapters folded into their weights, nothing of them left, the recipe plain.
  const HfExportResult exported = export_hf(run, tmp_ / "export");
  EXPECT_EQ(exported.merged_adapters, 6);  // q_proj, fc1, fc2 of two layers
  const StateDict merged = io::load_safetensors(tmp_ / "export" / "model.safetensors").tensors;
  for (const auto& [name, tensor] : merged) EXPECT_FALSE(is_adapter(name)) << name;
  EXPECT_EQ(read_file(tmp_ / "export" / "config.json").find("lora"), std::string::npos);

  // The adapted run evaluates as the base model carrying the merged weights does.
  CheckpointTask adapted = load_checkpoint_task(run.string());
  CheckpointTask plain = load_checkpoint_task(base().string());
  plain.task->model().load_state_dict(merged, /*strict=*/true);
  const double adapted_loss = loss_of(adapted.task->evaluate_split("valid", 4));
  const double plain_loss = loss_of(plain.task->evaluate_split("valid", 4));
  EXPECT_NEAR(adapted_loss, plain_loss, 1e-5 * plain_loss);
  const double base_loss =
      loss_of(load_checkpoint_task(base().string()).task->evaluate_split("valid", 4));
  std::printf("[ lora     ] valid loss: adapted %.9g, base + merged weights %.9g, base %.9g\n",
              adapted_loss, plain_loss, base_loss);
  // The adapters changed the model by far more than the two forms differ.
  EXPECT_GT(std::abs(adapted_loss - base_loss), 100 * std::abs(adapted_loss - plain_loss) + 1e-4);

  // A run fine-tuned from the adapted one starts from the merged weights.
  const recipes::Recipe recipe =
      recipes::load_recipe_text(read_file(latest(base()) / io::kRecipeFile), "base",
                                std::vector<std::string>{"finetune.init_from=" + run.string()});
  CheckpointTask fresh = load_checkpoint_task(base().string());
  apply_finetune(recipe, fresh.task->model());
  for (const auto& [name, tensor] : fresh.task->model().state_dict()) {
    ASSERT_TRUE(merged.contains(name)) << name;
    EXPECT_TRUE(same_bytes(tensor, merged.at(name))) << name;
  }
}

TEST_F(LoraRun, ABaseThatMovedOrChangedIsRefusedNamingIt) {
  const fs::path run = tmp_ / "lora", own_base = tmp_ / "own_base";
  ASSERT_EQ(train("tiny_causal_lm", own_base, {"train.steps=5", "train.eval_every=5"}), kExitOk);
  ASSERT_EQ(train("tiny_causal_lm", run, lora_overrides(own_base, {"train.steps=5"})), kExitOk);
  const fs::path base_step = fs::weakly_canonical(latest(own_base));
  EXPECT_NO_THROW(io::load_checkpoint(latest(run)));

  fs::rename(own_base, tmp_ / "moved");
  try {
    io::load_checkpoint(latest(run));
    ADD_FAILURE() << "a missing base was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(base_step.string()), std::string::npos) << message;
    EXPECT_NE(message.find("missing"), std::string::npos) << message;
  }
  fs::rename(tmp_ / "moved", own_base);

  // Another run's checkpoint of the same step put in the base's place.
  const fs::path other = tmp_ / "other";
  ASSERT_EQ(train("tiny_causal_lm", other, {"train.steps=5", "train.eval_every=5", "train.seed=2"}),
            kExitOk);
  fs::remove_all(base_step);
  fs::copy(latest(other), base_step, fs::copy_options::recursive);
  try {
    io::load_checkpoint(latest(run));
    ADD_FAILURE() << "a changed base was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("has changed since the run started"), std::string::npos) << message;
  }
}

TEST_F(LoraRun, AClassifierFromAMaskedLmTrainsItsNewHeadBesideTheAdapters) {
  const fs::path mlm = tmp_ / "mlm", cls = tmp_ / "cls";
  ASSERT_EQ(train("tiny_masked_lm", mlm, {"train.steps=4", "train.eval_every=4"}), kExitOk);
  ASSERT_EQ(train("tiny_classifier", cls,
                  {"finetune.init_from=" + mlm.string(), "finetune.lora.rank=2",
                   "finetune.lora.train+=norms", "train.steps=4", "train.eval_every=4"}),
            kExitOk);
  std::set<std::string> stored;
  for (const auto& [name, tensor] : io::load_safetensors(latest(cls) / io::kModelFile).tensors) {
    stored.insert(name);
  }
  EXPECT_TRUE(stored.count("classifier.weight"));
  EXPECT_TRUE(stored.count("classifier.bias"));
  EXPECT_TRUE(stored.count("encoder.blocks.0.attn.v_proj.lora_b"));
  EXPECT_TRUE(stored.count("encoder.final_norm.weight"));  // finetune.lora.train: norms
  EXPECT_FALSE(stored.count("encoder.embed.weight"));
  EXPECT_FALSE(stored.count("encoder.blocks.0.attn.v_proj.weight"));
  // It evaluates from the adapters plus its base.
  EXPECT_NO_THROW(load_checkpoint_task(cls.string()).task->evaluate_split("valid", 2));
}

TEST_F(LoraRun, ARoleTheModelLacksIsNoErrorButAPrefixThatMatchesNothingIs) {
  const fs::path nope = tmp_ / "nope", run = tmp_ / "lora";
  ASSERT_EQ(train("tiny_causal_lm", nope,
                  {"model.position={none {}}", "train.steps=2", "train.eval_every=2"}),
            kExitOk);
  ASSERT_EQ(
      train("tiny_causal_lm", run,
            lora_overrides(nope, {"model.position={none {}}", "finetune.lora.train+=positional",
                                  "finetune.lora.train+=norms", "train.steps=2"})),
      kExitOk);
  std::set<std::string> stored;
  for (const auto& [name, tensor] : io::load_safetensors(latest(run) / io::kModelFile).tensors) {
    stored.insert(name);
  }
  EXPECT_TRUE(stored.count("encoder.final_norm.weight"));  // norms train
  EXPECT_EQ(stored.size(), 16u + 2u + 2 * 6u);  // adapters, final norm, ln1/ln2/attn.norm × 2
  try {
    train("tiny_causal_lm", tmp_ / "bad",
          lora_overrides(nope, {"model.position={none {}}", "finetune.lora.train+=encoder.pos"}));
    ADD_FAILURE() << "a prefix that matches nothing was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'encoder.pos' matches no trainable parameter"),
              std::string::npos)
        << e.what();
  }
}

// The memory budget counts gradients and optimizer state for what trains only: a budget the
// full fine-tune exceeds (its AdamW state alone is 12 bytes per parameter) admits the adapters.
TEST_F(LoraRun, TheMemoryBudgetCountsOnlyWhatTrains) {
  const auto dry = [&](std::vector<std::string> overrides, int64_t budget) {
    TrainRequest args;
    args.recipe = recipe_path("tiny_causal_lm");
    args.out = (tmp_ / "dry").string();
    args.overrides = std::move(overrides);
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
  const auto [lora_code, lora_out] = dry(lora_overrides(base()), 0);
  ASSERT_EQ(lora_code, kExitOk) << lora_out;
  // 8 adapters of rank 4 on 32 × 32 projections: 4 · (32 + 32) · 8 = 2,048 parameters.
  EXPECT_NE(lora_out.find("(2048 trainable)"), std::string::npos) << lora_out;
  EXPECT_NE(lora_out.find("gradients and optimizer state 24 KB"), std::string::npos) << lora_out;
  const auto [full_code, full_out] = dry({"finetune.init_from=" + base().string()}, 0);
  ASSERT_EQ(full_code, kExitOk) << full_out;
  EXPECT_NE(full_out.find("gradients and optimizer state 299 KB"), std::string::npos) << full_out;
  // 1 MB: the adapted run (~0.9 MB) fits, the full fine-tune (~1.2 MB) does not.
  EXPECT_EQ(dry(lora_overrides(base()), 1 << 20).first, kExitOk);
  EXPECT_NE(dry({"finetune.init_from=" + base().string()}, 1 << 20).first, kExitOk);
}

TEST_F(LoraRun, RefusesTargetsAndNamesThatSelectNothing) {
  int attempt = 0;
  const auto message_of = [&](std::vector<std::string> extra) {
    try {
      train("tiny_causal_lm", tmp_ / ("bad" + std::to_string(++attempt)),
            lora_overrides(base(), extra));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::string m = message_of({"finetune.lora.targets+=query"});
  EXPECT_NE(m.find("'query' selects no layer"), std::string::npos) << m;
  m = message_of({"finetune.lora.targets+=ln1"});
  EXPECT_NE(m.find("not a linear layer"), std::string::npos) << m;
  m = message_of({"finetune.lora.train+=decoder."});
  EXPECT_NE(m.find("'decoder.' matches no trainable parameter"), std::string::npos) << m;
  m = message_of({"finetune.lora.rank=33"});
  EXPECT_NE(m.find("finetune.lora.rank"), std::string::npos) << m;
  m = message_of({"finetune.lora.targets+=q_proj", "finetune.lora.targets+=q_proj"});
  EXPECT_NE(m.find("listed twice"), std::string::npos) << m;
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
