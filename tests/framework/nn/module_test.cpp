// Module base: dotted names in registration order, modes, gradients, state dict round trip/errors.
#include "framework/nn/module.h"

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"

namespace rota::nn {
namespace ROTA_TEST_FILE_NS {

using rota::testing::allclose;
using rota::testing::expect_error;

/// A leaf layer: weight [out, in] and bias [out].
class TinyLinear : public Module {
 public:
  TinyLinear(int64_t in, int64_t out, Generator& gen) {
    weight_ = register_parameter("weight", randn({out, in}, gen));
    bias_ = register_parameter("bias", randn({out}, gen));
  }
  Variable weight_, bias_;
};

/// A module that records train-mode notifications.
class Attention : public Module {
 public:
  explicit Attention(Generator& gen) {
    q_proj_ = register_module("q_proj", std::make_shared<TinyLinear>(3, 4, gen));
    k_proj_ = register_module("k_proj", std::make_shared<TinyLinear>(3, 4, gen));
  }
  void on_train_mode_changed(bool training) override { notifications_.push_back(training); }
  std::shared_ptr<TinyLinear> q_proj_, k_proj_;
  std::vector<bool> notifications_;
};

class Block : public Module {
 public:
  explicit Block(Generator& gen) {
    gain_ = register_parameter("gain", ones({3}));
    attn_ = register_module("attn", std::make_shared<Attention>(gen));
    rotation_ = register_buffer("rotation", randn({2, 2}, gen));
  }
  Variable gain_;
  std::shared_ptr<Attention> attn_;
  Tensor rotation_;
};

class Model : public Module {
 public:
  explicit Model(uint64_t seed) : gen_(seed) {
    scale_ = register_parameter("scale", full({1}, 2.0));
    auto blocks = register_module("blocks", std::make_shared<Module>());
    for (int i = 0; i < 2; ++i) {
      block_.push_back(blocks->register_module(std::to_string(i), std::make_shared<Block>(gen_)));
    }
    head_ = register_module("head", std::make_shared<TinyLinear>(3, 5, gen_));
    frozen_ = register_parameter("frozen", randn({2}, gen_), /*requires_grad=*/false);
  }
  Generator gen_;
  Variable scale_, frozen_;
  std::vector<std::shared_ptr<Block>> block_;
  std::shared_ptr<TinyLinear> head_;
};

std::vector<std::string> names_of(const auto& named) {
  std::vector<std::string> names;
  for (const auto& entry : named) names.push_back(entry.first);
  return names;
}

TEST(ModuleBase, NamedParametersAreDepthFirstInRegistrationOrder) {
  Model model(1);
  const std::vector<std::string> expected = {
      "scale",
      "frozen",
      "blocks.0.gain",
      "blocks.0.attn.q_proj.weight",
      "blocks.0.attn.q_proj.bias",
      "blocks.0.attn.k_proj.weight",
      "blocks.0.attn.k_proj.bias",
      "blocks.1.gain",
      "blocks.1.attn.q_proj.weight",
      "blocks.1.attn.q_proj.bias",
      "blocks.1.attn.k_proj.weight",
      "blocks.1.attn.k_proj.bias",
      "head.weight",
      "head.bias",
  };
  const auto named = model.named_parameters();
  EXPECT_EQ(names_of(named), expected);
  // The handles are the same variables the layers hold (shared state, not copies).
  EXPECT_EQ(named[8].second.impl(), model.block_[1]->attn_->q_proj_->weight_.impl());
  EXPECT_EQ(model.parameters().size(), expected.size());
  EXPECT_FALSE(named[1].second.requires_grad());
  EXPECT_TRUE(named[0].second.requires_grad());

  int64_t total = 0;
  for (const auto& entry : named) total += entry.second.numel();
  EXPECT_EQ(model.num_parameters(), total);
  EXPECT_EQ(total, 1 + 2 + 2 * (3 + 2 * (12 + 4)) + 15 + 5);

  EXPECT_EQ(names_of(model.named_buffers()),
            (std::vector<std::string>{"blocks.0.rotation", "blocks.1.rotation"}));
  EXPECT_EQ(names_of(model.named_children()), (std::vector<std::string>{"blocks", "head"}));
  EXPECT_EQ(
      names_of(model.named_modules()),
      (std::vector<std::string>{"", "blocks", "blocks.0", "blocks.0.attn", "blocks.0.attn.q_proj",
                                "blocks.0.attn.k_proj", "blocks.1", "blocks.1.attn",
                                "blocks.1.attn.q_proj", "blocks.1.attn.k_proj", "head"}));
  EXPECT_EQ(model.parameter("scale").impl(), model.scale_.impl());
  EXPECT_THROW(model.parameter("nope"), Error);
}

TEST(ModuleBase, StateDictListsParametersThenBuffersPerModule) {
  Model model(2);
  const StateDict state = model.state_dict();
  const std::vector<std::string> names = names_of(state);
  ASSERT_EQ(names.size(), 16u);
  EXPECT_EQ(names[0], "scale");
  EXPECT_EQ(names[1], "frozen");
  EXPECT_EQ(names[2], "blocks.0.gain");
  EXPECT_EQ(names[3], "blocks.0.rotation");  // own buffers before children
  EXPECT_EQ(names[4], "blocks.0.attn.q_proj.weight");
  EXPECT_EQ(names[15], "head.bias");
  // Entries share storage with the module.
  EXPECT_EQ(state.at("head.weight").storage(), model.head_->weight_.data().storage());
  EXPECT_THROW(state.at("head.gamma"), Error);
}

TEST(ModuleBase, TrainModePropagatesToDescendants) {
  Model model(3);
  EXPECT_TRUE(model.is_training());
  model.eval();
  EXPECT_FALSE(model.is_training());
  EXPECT_FALSE(model.block_[1]->attn_->q_proj_->is_training());
  EXPECT_EQ(model.block_[0]->attn_->notifications_, std::vector<bool>{false});
  model.train();
  EXPECT_TRUE(model.head_->is_training());
  EXPECT_TRUE(model.block_[0]->attn_->k_proj_->is_training());
  EXPECT_EQ(model.block_[0]->attn_->notifications_, (std::vector<bool>{false, true}));
}

TEST(ModuleBase, ZeroGradDropsEveryGradient) {
  Model model(4);
  for (auto& param : model.parameters()) param.set_grad(ones(param.shape()));
  model.zero_grad();
  for (const auto& [name, param] : model.named_parameters()) {
    EXPECT_FALSE(param.grad().defined()) << name;
  }
}

TEST(ModuleBase, RejectsBadAndDuplicateNames) {
  Generator gen(5);
  Module m;
  m.register_parameter("w", zeros({2}));
  expect_error([&] { m.register_parameter("a.b", zeros({2})); }, {"'a.b'", "'.'"});
  expect_error([&] { m.register_parameter("", zeros({2})); }, {"empty"});
  expect_error([&] { m.register_parameter("w", zeros({2})); }, {"'w'", "already used"});
  expect_error([&] { m.register_buffer("w", zeros({2})); }, {"'w'", "already used"});
  expect_error([&] { m.register_module("w", std::make_shared<Module>()); },
               {"'w'", "already used"});
  m.register_module("child", std::make_shared<TinyLinear>(2, 2, gen));
  expect_error([&] { m.register_parameter("child", zeros({2})); }, {"'child'"});
  expect_error([&] { m.register_module("null", std::shared_ptr<Module>()); }, {"null"});
  // Integer tensors cannot be trainable parameters.
  EXPECT_THROW(m.register_parameter("ids", zeros({2}, DType::kI64)), Error);
  // Non-contiguous tensors are copied into a contiguous parameter (optimizers work in place).
  const Tensor base = arange(0, 6, 1, DType::kF64).reshape({2, 3});
  const Variable p = m.register_parameter("t", base.transpose(0, 1));
  EXPECT_TRUE(p.data().is_contiguous());
  EXPECT_TRUE(allclose(p.data(), base.transpose(0, 1), 0, 0));
}

TEST(ModuleBase, TiedParameterIsListedOnceButSavedUnderEachName) {
  Generator gen(6);
  Module m;
  auto embed = m.register_module("embed", std::make_shared<TinyLinear>(3, 4, gen));
  auto head = m.register_module("head", std::make_shared<Module>());
  head->register_parameter("weight", embed->weight_);
  EXPECT_EQ(names_of(m.named_parameters()),
            (std::vector<std::string>{"embed.weight", "embed.bias"}));
  EXPECT_EQ(m.num_parameters(), 12 + 4);
  EXPECT_EQ(names_of(m.state_dict()),
            (std::vector<std::string>{"embed.weight", "embed.bias", "head.weight"}));
}

TEST(ModuleBase, StateDictRoundTripCopiesValuesInPlace) {
  Model source(10);
  Model target(11);
  // Take snapshots: state_dict tensors alias the live parameters.
  StateDict snapshot;
  for (const auto& [name, tensor] : source.state_dict()) snapshot.insert(name, tensor.clone());
  const Tensor rotation_handle = target.block_[1]->rotation_;
  const auto storage_before = target.head_->weight_.data().storage();

  target.load_state_dict(snapshot);
  for (const auto& [name, tensor] : target.state_dict()) {
    EXPECT_TRUE(allclose(tensor, snapshot.at(name), 0, 0)) << name;
  }
  // Loaded in place: the same storage, and handles kept by layers see the new values.
  EXPECT_EQ(target.head_->weight_.data().storage(), storage_before);
  EXPECT_TRUE(allclose(rotation_handle, snapshot.at("blocks.1.rotation"), 0, 0));
  // A copy, not an alias: changing the source afterwards leaves the target alone.
  Tensor(source.head_->weight_.data()).fill(123.0);
  EXPECT_NE(target.head_->weight_.data().at({0, 0}), 123.0);
}

TEST(ModuleBase, LoadConvertsDtype) {
  Model target(12);
  Model source(13);
  StateDict state;
  for (const auto& [name, tensor] : source.state_dict()) state.insert(name, tensor.to(DType::kF64));
  target.load_state_dict(state);
  EXPECT_EQ(target.head_->weight_.dtype(), DType::kF32);
  EXPECT_TRUE(allclose(target.head_->weight_.data(), source.head_->weight_.data(), 0, 0));
}

TEST(ModuleBase, LoadErrorsNameTheEntriesAndLeaveTheModuleUntouched) {
  Model target(20);
  const Tensor before = target.head_->weight_.data().clone();
  Model source(21);
  StateDict full_state = source.state_dict();

  // Missing entries (strict): every missing name is listed.
  {
    StateDict partial;
    for (const auto& [name, tensor] : full_state) {
      if (name != "head.bias" && name != "blocks.0.rotation") partial.insert(name, tensor);
    }
    expect_error([&] { target.load_state_dict(partial); },
                 {"missing 'head.bias'", "missing 'blocks.0.rotation'", "2 problem"});
    EXPECT_TRUE(allclose(target.head_->weight_.data(), before, 0, 0));
    // Non-strict: loads what is there.
    target.load_state_dict(partial, /*strict=*/false);
    EXPECT_TRUE(allclose(target.head_->weight_.data(), source.head_->weight_.data(), 0, 0));
    Tensor(target.head_->weight_.data()).copy_from(before);
  }
  // Unexpected entries.
  {
    StateDict extra;
    for (const auto& [name, tensor] : full_state) extra.insert(name, tensor);
    extra.insert("blocks.7.gain", ones({3}));
    expect_error([&] { target.load_state_dict(extra); }, {"unexpected 'blocks.7.gain'"});
    EXPECT_TRUE(allclose(target.head_->weight_.data(), before, 0, 0));
    target.load_state_dict(extra, /*strict=*/false);
    Tensor(target.head_->weight_.data()).copy_from(before);
  }
  // Shape mismatch: name and both shapes, strict or not.
  {
    StateDict wrong;
    for (const auto& [name, tensor] : full_state) {
      wrong.insert(name, name == "head.weight" ? zeros({5, 4}) : tensor);
    }
    for (bool strict : {true, false}) {
      expect_error([&] { target.load_state_dict(wrong, strict); },
                   {"'head.weight'", "[5,4]", "[5,3]"});
      EXPECT_TRUE(allclose(target.head_->weight_.data(), before, 0, 0));
    }
  }
  // Integer bits where the module holds floats (an F32 tensor relabelled I32 in a file): refused,
  // strict or not, never converted; a float of another precision converts.
  {
    StateDict relabelled, other_precision;
    for (const auto& [name, tensor] : full_state) {
      relabelled.insert(name, name == "head.weight" ? zeros({5, 3}, DType::kI32) : tensor);
      other_precision.insert(name, name == "head.weight" ? tensor.to(DType::kF64) : tensor);
    }
    for (bool strict : {true, false}) {
      expect_error([&] { target.load_state_dict(relabelled, strict); },
                   {"'head.weight'", "checkpoint holds i32", "never converted"});
      EXPECT_TRUE(allclose(target.head_->weight_.data(), before, 0, 0));
    }
    target.load_state_dict(other_precision);
    EXPECT_TRUE(allclose(target.head_->weight_.data(), source.head_->weight_.data(), 0, 0));
    Tensor(target.head_->weight_.data()).copy_from(before);
  }
  // Duplicate insertion into a state dict.
  StateDict dup;
  dup.insert("a", zeros({1}));
  expect_error([&] { dup.insert("a", zeros({1})); }, {"duplicate", "'a'"});
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::nn
