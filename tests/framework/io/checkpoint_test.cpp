// Checkpoint directories: round trips (incl. a Module + AdamW), atomicity, keep-last-N, refusals.
#include "framework/io/checkpoint.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/safetensors.h"
#include "framework/nn/linear.h"
#include "framework/optim/adam.h"
#include "framework/tensor/random.h"
#include "tests/framework/io/io_test_util.h"
#include "tests/support/expect_error.h"

namespace rota::io {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

// Bitwise equality of two tensors (same dtype, shape and every byte).
::testing::AssertionResult identical(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ::testing::AssertionFailure()
           << "dtype/shape differ: " << shape_str(a.shape()) << " vs " << shape_str(b.shape());
  }
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  if (ca.nbytes() > 0 && std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) != 0) {
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

Checkpoint sample_checkpoint(int64_t step) {
  Checkpoint c;
  Generator gen(static_cast<uint64_t>(step));
  c.model.insert("embed.weight", randn({4, 3}, gen));
  c.model.insert("blocks.0.scale", randn({3}, gen, 0, 1, DType::kF64));
  c.optimizer.emplace_back("step", scalar_tensor(static_cast<double>(step), DType::kI64));
  c.optimizer.emplace_back("embed.weight.exp_avg", randn({4, 3}, gen));
  c.state.set_step(step);
  c.state.set_tokens_seen(step * 1000);
  c.state.set_lr_scale(1.0);
  c.recipe_text = "model { layers: 2 }\n# step " + std::to_string(step) + "\n";
  c.extra_files["tokenizer.json"] = "{\"vocab\": 65}";
  return c;
}

void expect_same(const Checkpoint& a, const Checkpoint& b) {
  ASSERT_EQ(a.model.size(), b.model.size());
  for (const auto& [name, tensor] : a.model)
    EXPECT_TRUE(identical(tensor, b.model.at(name))) << name;
  ASSERT_EQ(a.optimizer.size(), b.optimizer.size());
  for (size_t i = 0; i < a.optimizer.size(); ++i) {
    EXPECT_EQ(a.optimizer[i].first, b.optimizer[i].first);
    EXPECT_TRUE(identical(a.optimizer[i].second, b.optimizer[i].second)) << a.optimizer[i].first;
  }
  EXPECT_EQ(a.state.step(), b.state.step());
  EXPECT_EQ(a.state.tokens_seen(), b.state.tokens_seen());
  EXPECT_EQ(a.recipe_text, b.recipe_text);
  EXPECT_EQ(a.extra_files, b.extra_files);
}

TEST(Checkpoint, RoundTripAndDirectoryLayout) {
  TempDir run;
  const Checkpoint saved = sample_checkpoint(500);
  const fs::path dir = save_checkpoint(run.path(), saved);
  EXPECT_EQ(dir, run.path() / "checkpoints" / "step_000500");
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "state.binpb",
                           "recipe.txtpb", "tokenizer.json"}) {
    EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
  }
  EXPECT_EQ(read_bytes(run.path() / "checkpoints" / "latest"), "step_000500\n");
  EXPECT_EQ(read_bytes(dir / "recipe.txtpb"), saved.recipe_text);
  EXPECT_FALSE(fs::exists(run.path() / "checkpoints" / "step_000500.tmp"));

  ASSERT_EQ(find_latest(run.path()), dir);
  const Checkpoint loaded = load_checkpoint(*find_latest(run.path()));
  expect_same(saved, loaded);
  EXPECT_GT(loaded.state.saved_unix_time(), 0);
  EXPECT_EQ(loaded.state.files_size(), 4);  // model, optimizer, recipe, tokenizer.json
  EXPECT_EQ(resolve_checkpoint(run.path()), dir);
  EXPECT_EQ(resolve_checkpoint(dir), dir);
  EXPECT_FALSE(find_best(run.path()).has_value());
}

TEST(Checkpoint, FreshRunHasNoLatest) {
  TempDir run;
  EXPECT_FALSE(find_latest(run.path()).has_value());
  EXPECT_TRUE(list_checkpoints(run.path()).empty());
  rota::testing::expect_error([&] { resolve_checkpoint(run.path()); },
                              {"neither a checkpoint directory"});
  rota::testing::expect_error([&] { resolve_checkpoint(run / "nope"); }, {"no such file"});
  EXPECT_EQ(checkpoint_dir_name(0), "step_000000");
  EXPECT_EQ(checkpoint_dir_name(12345678), "step_12345678");
}

// A small model whose state includes a buffer, trained a few AdamW steps so that the optimizer
// has moments to save.
class TinyNet : public nn::Module {
 public:
  explicit TinyNet(uint64_t seed) {
    Generator gen(seed);
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(nn::LinearOptions{4, 8}, gen));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(nn::LinearOptions{8, 2}, gen));
    scale_ = register_buffer("scale", randn({2}, gen));
  }
  Variable loss(const Tensor& x) const {
    const Variable h = tanh(fc1_->forward(Variable(x)));
    const Variable y = mul(fc2_->forward(h), Variable(scale_));
    return mean(square(y));
  }

 private:
  std::shared_ptr<nn::Linear> fc1_, fc2_;
  Tensor scale_;
};

std::unique_ptr<optim::AdamW> make_adamw(const TinyNet& net) {
  optim::AdamOptions options;
  options.weight_decay = 0.1;
  options.lr = 0.01;
  return std::make_unique<optim::AdamW>(
      optim::decay_param_groups(net.named_parameters(), options.lr, options.weight_decay), options);
}

void train_step(TinyNet& net, optim::Optimizer& opt, const Tensor& x) {
  opt.zero_grad();
  net.loss(x).backward();
  opt.step();
}

TEST(Checkpoint, ModuleAndAdamWRoundTripGivesIdenticalTensorsAndNextStep) {
  TempDir run;
  Generator data(9);
  const Tensor x = randn({5, 4}, data);
  TinyNet net(1);
  auto opt = make_adamw(net);
  for (int i = 0; i < 3; ++i) train_step(net, *opt, x);

  Checkpoint checkpoint;
  checkpoint.model = net.state_dict();
  checkpoint.optimizer = opt->state_tensors();
  checkpoint.state.set_step(opt->step_count());
  checkpoint.recipe_text = "tiny";
  save_checkpoint(run.path(), checkpoint);

  TinyNet restored_net(2);  // different initial weights
  auto restored_opt = make_adamw(restored_net);
  const Checkpoint loaded = load_checkpoint(*find_latest(run.path()));
  EXPECT_EQ(loaded.state.step(), 3);
  restored_net.load_state_dict(loaded.model);
  restored_opt->load_state(loaded.optimizer);

  for (const auto& [name, tensor] : net.state_dict()) {
    EXPECT_TRUE(identical(restored_net.state_dict().at(name), tensor)) << name;
  }
  const auto expected_state = opt->state_tensors();
  const auto restored_state = restored_opt->state_tensors();
  ASSERT_EQ(restored_state.size(), expected_state.size());
  for (size_t i = 0; i < expected_state.size(); ++i) {
    EXPECT_EQ(restored_state[i].first, expected_state[i].first);
    EXPECT_TRUE(identical(restored_state[i].second, expected_state[i].second))
        << expected_state[i].first;
  }
  EXPECT_EQ(restored_opt->step_count(), 3);
  // The restored pair continues exactly like the original.
  train_step(net, *opt, x);
  train_step(restored_net, *restored_opt, x);
  for (const auto& [name, tensor] : net.state_dict()) {
    EXPECT_TRUE(identical(restored_net.state_dict().at(name), tensor)) << "after a step: " << name;
  }
}

TEST(Checkpoint, KeepsTheLastNAndTheBest) {
  TempDir run;
  for (int64_t step : {100, 200, 300, 400, 500, 600}) {
    CheckpointSaveOptions options;
    options.keep_last = 3;
    options.is_best = step == 200;
    save_checkpoint(run.path(), sample_checkpoint(step), options);
  }
  std::vector<int64_t> steps;
  for (const auto& [step, path] : list_checkpoints(run.path())) steps.push_back(step);
  EXPECT_EQ(steps, (std::vector<int64_t>{200, 400, 500, 600}));
  EXPECT_EQ(find_latest(run.path()), checkpoints_dir(run.path()) / "step_000600");
  EXPECT_EQ(find_best(run.path()), checkpoints_dir(run.path()) / "step_000200");
  expect_same(load_checkpoint(*find_best(run.path())), sample_checkpoint(200));
  // What a user types: the pointer files themselves resolve to the directories they name.
  EXPECT_EQ(resolve_checkpoint(checkpoints_dir(run.path()) / "best"),
            checkpoints_dir(run.path()) / "step_000200");
  EXPECT_EQ(resolve_checkpoint(checkpoints_dir(run.path()) / "latest"),
            checkpoints_dir(run.path()) / "step_000600");

  // A new best releases the old one; keep_last = 1 keeps only the newest plus the best.
  CheckpointSaveOptions options;
  options.keep_last = 1;
  options.is_best = true;
  save_checkpoint(run.path(), sample_checkpoint(700), options);
  steps.clear();
  for (const auto& [step, path] : list_checkpoints(run.path())) steps.push_back(step);
  EXPECT_EQ(steps, (std::vector<int64_t>{700}));
  // keep_last = 0 keeps everything.
  options.is_best = false;
  options.keep_last = 0;
  for (int64_t step : {800, 900}) save_checkpoint(run.path(), sample_checkpoint(step), options);
  EXPECT_EQ(list_checkpoints(run.path()).size(), 3u);
}

TEST(Checkpoint, NeverDeletesTheOneJustWritten) {
  TempDir run;
  CheckpointSaveOptions options;
  options.keep_last = 2;
  for (int64_t step : {300, 400, 500})
    save_checkpoint(run.path(), sample_checkpoint(step), options);
  // Resuming from an older step and saving it: newer directories exist, but this one stays.
  save_checkpoint(run.path(), sample_checkpoint(100), options);
  EXPECT_TRUE(fs::exists(checkpoints_dir(run.path()) / "step_000100"));
  EXPECT_EQ(find_latest(run.path()), checkpoints_dir(run.path()) / "step_000100");
}

TEST(Checkpoint, SavingTheSameStepAgainReplacesIt) {
  TempDir run;
  save_checkpoint(run.path(), sample_checkpoint(100));
  Checkpoint again = sample_checkpoint(100);
  again.recipe_text = "replaced";
  again.extra_files.clear();
  save_checkpoint(run.path(), again);
  const Checkpoint loaded = load_checkpoint(*find_latest(run.path()));
  EXPECT_EQ(loaded.recipe_text, "replaced");
  EXPECT_TRUE(loaded.extra_files.empty());
  EXPECT_FALSE(fs::exists(checkpoints_dir(run.path()) / "step_000100" / "tokenizer.json"));
  for (const auto& entry : fs::directory_iterator(checkpoints_dir(run.path()))) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "step_000100" || name == "latest") << "left over: " << name;
  }
}

// The process dies while writing step 200: a half-written step_000200.tmp/ with a truncated
// file is all that is left of it. Nothing of step 100 may be lost.
TEST(Checkpoint, CrashMidWriteLosesNothing) {
  TempDir run;
  const Checkpoint first = sample_checkpoint(100);
  save_checkpoint(run.path(), first);
  const fs::path ckpts = checkpoints_dir(run.path());
  fs::create_directory(ckpts / "step_000200.tmp");
  const std::string model = read_bytes(ckpts / "step_000100" / "model.safetensors");
  write_bytes(ckpts / "step_000200.tmp" / "model.safetensors", model.substr(0, model.size() / 2));
  write_bytes(ckpts / "latest.tmp", "step_0002");  // a torn pointer update

  EXPECT_EQ(find_latest(run.path()), ckpts / "step_000100");
  expect_same(load_checkpoint(*find_latest(run.path())), first);
  ASSERT_EQ(list_checkpoints(run.path()).size(), 1u);

  // Step 200 renamed into place but the process died before `latest` moved: latest is the
  // commit point, so the run resumes from step 100 (which still loads).
  save_checkpoint(run.path(), sample_checkpoint(200));
  write_file_atomically(ckpts / "latest", "step_000100\n");
  expect_same(load_checkpoint(*find_latest(run.path())), first);

  // The next save clears the leftovers.
  fs::create_directory(ckpts / "step_000250.tmp");
  fs::create_directory(ckpts / "step_000050.deleting");
  save_checkpoint(run.path(), sample_checkpoint(300));
  EXPECT_FALSE(fs::exists(ckpts / "step_000200.tmp"));
  EXPECT_FALSE(fs::exists(ckpts / "step_000250.tmp"));
  EXPECT_FALSE(fs::exists(ckpts / "step_000050.deleting"));
}

class CheckpointRefuses : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = save_checkpoint(run_.path(), sample_checkpoint(100)); }
  void load_expecting(const std::vector<std::string>& parts) {
    rota::testing::expect_error([&] { load_checkpoint(dir_); }, parts);
  }
  TempDir run_;
  fs::path dir_;
};

TEST_F(CheckpointRefuses, TruncatedModel) {
  const std::string bytes = read_bytes(dir_ / "model.safetensors");
  write_bytes(dir_ / "model.safetensors", bytes.substr(0, bytes.size() - 7));
  load_expecting(
      {dir_.string(), "model.safetensors", "bytes but state.binpb recorded", "truncated"});
}

TEST_F(CheckpointRefuses, CorruptedOptimizer) {
  std::string bytes = read_bytes(dir_ / "optimizer.safetensors");
  bytes[bytes.size() - 2] ^= 0x04;
  write_bytes(dir_ / "optimizer.safetensors", bytes);
  load_expecting({"optimizer.safetensors", "crc32c", "corrupted"});
}

TEST_F(CheckpointRefuses, CorruptedOrTruncatedState) {
  const std::string bytes = read_bytes(dir_ / "state.binpb");
  std::string flipped = bytes;
  flipped[2] ^= 0x20;
  write_bytes(dir_ / "state.binpb", flipped);
  load_expecting({"state.binpb", "checksum mismatch"});
  write_bytes(dir_ / "state.binpb", bytes.substr(0, bytes.size() - 1));
  load_expecting({"state.binpb"});
  write_bytes(dir_ / "state.binpb", "");
  load_expecting({"state.binpb", "truncated"});
}

TEST_F(CheckpointRefuses, EditedRecipeAndMissingFiles) {
  write_bytes(dir_ / "recipe.txtpb", "model { layers: 3 }\n");
  load_expecting({"recipe.txtpb", "state.binpb recorded"});
  fs::remove(dir_ / "recipe.txtpb");
  load_expecting({"missing recipe.txtpb"});
  fs::remove(dir_ / "tokenizer.json");
  fs::remove(dir_ / "model.safetensors");
  load_expecting({"missing model.safetensors"});
  rota::testing::expect_error([&] { load_checkpoint(run_ / "nope"); }, {"not a directory"});
}

TEST_F(CheckpointRefuses, FileFromAnotherCheckpoint) {
  const fs::path other = save_checkpoint(run_.path(), sample_checkpoint(200));
  fs::copy_file(other / "model.safetensors", dir_ / "model.safetensors",
                fs::copy_options::overwrite_existing);
  load_expecting({"model.safetensors", "another checkpoint"});
}

TEST_F(CheckpointRefuses, LatestPointingNowhere) {
  const fs::path latest = checkpoints_dir(run_.path()) / "latest";
  write_bytes(latest, "step_000900\n");
  rota::testing::expect_error([&] { find_latest(run_.path()); },
                              {"latest", "step_000900", "does not exist"});
  write_bytes(latest, "../../etc\n");
  rota::testing::expect_error([&] { find_latest(run_.path()); },
                              {"latest", "expected the name of a step directory"});
  write_bytes(latest, "\n");
  rota::testing::expect_error([&] { find_latest(run_.path()); }, {"latest"});
  fs::remove_all(dir_);
  write_bytes(latest, "step_000100\n");
  rota::testing::expect_error([&] { find_latest(run_.path()); }, {"does not exist"});
}

// A pointer is exactly a step directory name; anything else (binary, huge, a directory) is
// refused with rota::Error showing a bounded, printable excerpt (fuzz/checkpoint_pointer_fuzzer
// runs the parser on arbitrary bytes).
TEST(CheckpointPointer, AcceptsOnlyStepDirectoryNames) {
  EXPECT_EQ(parse_checkpoint_pointer("step_000500\n", "latest"), "step_000500");
  EXPECT_EQ(parse_checkpoint_pointer("step_1234567 \r\n", "latest"), "step_1234567");
  // Found by fuzz/checkpoint_pointer_fuzzer: "step_" and 300 zeros named a directory whose
  // name is too long, and fs::is_directory threw std::filesystem_error. Only the name
  // checkpoint_dir_name writes is accepted now.
  for (const std::string& bad :
       {std::string(""), std::string("\n"), std::string("other"), std::string("step_"),
        std::string("step_12a"), std::string("step_99999999999999999999999"),
        std::string("step_1\nstep_2"), std::string(".."), std::string("step_1"),
        "step_" + std::string(300, '0') + "1"}) {
    rota::testing::expect_error([&] { parse_checkpoint_pointer(bad, "RUN/latest"); },
                                {"checkpoint pointer RUN/latest", "expected the name of a step"});
  }
  rota::testing::expect_error(
      [] { parse_checkpoint_pointer(std::string("\x01\xff") + std::string(5000, 'x'), "latest"); },
      {"\\x01\\xff", "(5002 bytes)"});
}

TEST_F(CheckpointRefuses, LatestThatIsNotASmallRegularFile) {
  const fs::path latest = checkpoints_dir(run_.path()) / "latest";
  fs::remove(latest);
  fs::create_directories(latest);
  rota::testing::expect_error([&] { find_latest(run_.path()); }, {"latest", "not a regular file"});
  fs::remove_all(latest);
  write_bytes(latest, std::string(100000, 's'));
  rota::testing::expect_error([&] { find_latest(run_.path()); }, {"latest", "too long"});
}

TEST(Checkpoint, RefusesBadExtraFileNames) {
  TempDir run;
  for (const char* name : {"model.safetensors", "a/b", "", "x.tmp", ".."}) {
    Checkpoint c = sample_checkpoint(1);
    c.extra_files = {{name, "x"}};
    EXPECT_THROW(save_checkpoint(run.path(), c), Error) << name;
  }
  EXPECT_FALSE(find_latest(run.path()).has_value());
}

// A checkpoint that holds part of its model and names a base checkpoint for the rest.
class BaseWeightsCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    base_dir_ = save_checkpoint(base_run_.path(), sample_checkpoint(100));
    const Checkpoint base = load_checkpoint(base_dir_);
    for (const FileCheck& check : base.state.files()) {
      if (check.name() == kModelFile) model_check_ = check;
    }
  }
  // A run's checkpoint with its own "adapter" tensor and the base's embed.weight by reference.
  Checkpoint partial(const std::vector<std::string>& names) const {
    Checkpoint c = sample_checkpoint(7);
    StateDict own;
    own.insert("adapter", c.model.at("blocks.0.scale"));
    c.model = own;
    BaseWeights* base = c.state.mutable_base_weights();
    base->set_checkpoint(fs::absolute(base_dir_).string());
    base->set_model_size(model_check_.size());
    base->set_model_crc32c(model_check_.crc32c());
    for (const std::string& name : names) base->add_names(name);
    return c;
  }
  TempDir base_run_, run_;
  fs::path base_dir_;
  FileCheck model_check_;
};

TEST_F(BaseWeightsCheckpoint, LoadingFillsInTheNamedTensorsFromTheBase) {
  const fs::path dir = save_checkpoint(run_.path(), partial({"embed.weight"}));
  // On disk: only its own tensor, and a version-2 state.
  EXPECT_EQ(load_safetensors(dir / kModelFile).tensors.size(), 1u);
  EXPECT_EQ(decode_train_state(read_bytes(dir / kStateFile), "s").version(), 2u);
  const Checkpoint loaded = load_checkpoint(dir);
  ASSERT_EQ(loaded.model.size(), 2u);
  EXPECT_TRUE(
      identical(loaded.model.at("embed.weight"), sample_checkpoint(100).model.at("embed.weight")));
  EXPECT_TRUE(
      identical(loaded.model.at("adapter"), sample_checkpoint(7).model.at("blocks.0.scale")));
  // A chain: a third checkpoint takes "adapter" from the second and, through it, embed.weight.
  TempDir third_run;
  Checkpoint third = sample_checkpoint(9);
  third.model = StateDict();
  third.model.insert("own", sample_checkpoint(9).model.at("embed.weight"));
  BaseWeights* base = third.state.mutable_base_weights();
  base->set_checkpoint(fs::absolute(dir).string());
  const Checkpoint second = load_checkpoint(dir);
  const TrainState second_state = decode_train_state(read_bytes(dir / kStateFile), "s");
  for (const FileCheck& check : second_state.files()) {
    if (check.name() == kModelFile) {
      base->set_model_size(check.size());
      base->set_model_crc32c(check.crc32c());
    }
  }
  base->add_names("adapter");
  base->add_names("embed.weight");
  const Checkpoint chained = load_checkpoint(save_checkpoint(third_run.path(), third));
  ASSERT_EQ(chained.model.size(), 3u);
  EXPECT_TRUE(identical(chained.model.at("embed.weight"), second.model.at("embed.weight")));
  EXPECT_TRUE(identical(chained.model.at("adapter"), second.model.at("adapter")));
}

TEST_F(BaseWeightsCheckpoint, RefusesAMissingChangedOrIncompleteBase) {
  const fs::path missing_name = save_checkpoint(run_.path(), partial({"no.such.tensor"}));
  rota::testing::expect_error([&] { load_checkpoint(missing_name); },
                              {"no.such.tensor", "recorded as coming from there"});
  TempDir twice_run;
  Checkpoint both = partial({"embed.weight"});
  both.model.insert("embed.weight", sample_checkpoint(100).model.at("embed.weight"));
  const fs::path twice = save_checkpoint(twice_run.path(), both);
  rota::testing::expect_error([&] { load_checkpoint(twice); }, {"embed.weight", "both in"});

  TempDir changed_run;
  Checkpoint changed = partial({"embed.weight"});
  changed.state.mutable_base_weights()->set_model_crc32c(model_check_.crc32c() ^ 1u);
  const fs::path changed_dir = save_checkpoint(changed_run.path(), changed);
  rota::testing::expect_error([&] { load_checkpoint(changed_dir); },
                              {"has changed since the run started", base_dir_.string()});

  TempDir gone_run;
  const fs::path gone = save_checkpoint(gone_run.path(), partial({"embed.weight"}));
  fs::remove_all(base_dir_);
  rota::testing::expect_error([&] { load_checkpoint(gone); },
                              {"which is missing", fs::absolute(base_dir_).string()});
}

TEST_F(BaseWeightsCheckpoint, RefusesACheckpointThatIsItsOwnBase) {
  // The base reference of a checkpoint pointing at itself: followed until the chain limit.
  TempDir loop_run;
  Checkpoint loop = sample_checkpoint(3);
  const fs::path dir = save_checkpoint(loop_run.path(), loop);
  TrainState state = decode_train_state(read_bytes(dir / kStateFile), "s");
  BaseWeights* base = state.mutable_base_weights();
  base->set_checkpoint(fs::absolute(dir).string());
  for (const FileCheck& check : state.files()) {
    if (check.name() == kModelFile) {
      base->set_model_size(check.size());
      base->set_model_crc32c(check.crc32c());
    }
  }
  base->add_names("embed.weight");
  write_bytes(dir / kStateFile, encode_train_state(state));
  rota::testing::expect_error([&] { load_checkpoint(dir); }, {"base checkpoints in a chain"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::io
