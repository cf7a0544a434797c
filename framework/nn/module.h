// Module: the base of every layer — named parameters, buffers, child modules and state dicts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/autograd/variable.h"
#include "framework/tensor/state_dict.h"
#include "framework/tensor/tensor.h"

namespace rota::nn {

/// What a parameter is, for policies that treat kinds differently (weight decay groups,
/// freezing "embeddings"). A module that decides the role of every parameter under it says so
/// through Module::parameter_role(); otherwise matrices are weights and vectors biases.
enum class ParameterRole {
  kWeight,      // matrices of projections and heads
  kBias,        // rank-1 tensors outside norms (biases, the MLM output bias)
  kNorm,        // LayerNorm / RMSNorm gains and offsets
  kEmbedding,   // token and learned absolute position embeddings
  kPositional,  // LRPE θ and Householder v, relative tables and biases (Shaw, XL, T5, skew)
};

/// Base class of all layers. A subclass registers its parameters, buffers and children in its
/// constructor and keeps the returned handles for its forward:
///
///   weight_ = register_parameter("weight", init::kaiming_uniform_(...));
///   attn_ = register_module("attn", std::make_shared<Attention>(...));
///
/// Names are joined with dots over the tree (`blocks.3.attn.q_proj.weight`), so a local name
/// must be non-empty, contain no '.', and be unique among the module's parameters, buffers and
/// children. Modules are held by shared_ptr and are not copyable (a copy would silently share
/// parameters).
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Registers a parameter (made contiguous; shares storage with `value` when it already is).
  /// requires_grad = false gives a frozen parameter: still saved, listed and loadable, but it
  /// gets no gradient and so the optimizers leave it alone.
  Variable register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  /// Registers an existing leaf Variable, e.g. to tie an output projection to the embedding.
  /// The shared parameter is listed once by named_parameters()/parameters() (under the first
  /// name reached) but appears under every name in state_dict(), as in PyTorch.
  Variable register_parameter(const std::string& name, const Variable& param);
  /// Registers a non-trainable tensor saved with the state (e.g. a fixed rotation table).
  /// Loading a state dict writes into its storage in place, so the returned handle stays valid.
  Tensor register_buffer(const std::string& name, Tensor value);
  /// Registers a child module; returns it with its own type for the caller to keep.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  /// All parameters with dotted names: this module's own in registration order, then each
  /// child's (in registration order, recursively). A parameter reachable under several names
  /// (tied weights, a child registered twice) is listed once, under the first name.
  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  std::vector<Variable> parameters() const;
  /// All buffers with dotted names, in the same order as named_parameters.
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  /// Direct children in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// This module (name "") and every descendant, depth-first pre-order, with dotted names.
  std::vector<std::pair<std::string, Module*>> named_modules();
  /// The parameter registered directly on this module under `name`; throws if none.
  const Variable& parameter(const std::string& name) const;

  /// Sets training mode on this module and every descendant (dropout etc. read it).
  void train(bool training = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Drops the accumulated gradient of every parameter.
  void zero_grad();
  /// Total number of parameter elements (frozen ones included, shared ones once).
  int64_t num_parameters() const;
  /// The role of every parameter under this module, if the module decides it (norms,
  /// embeddings and positional encodings do); the deepest deciding module wins.
  virtual std::optional<ParameterRole> parameter_role() const { return std::nullopt; }

  /// Parameters then buffers of each module, depth-first (own entries before children's).
  /// The tensors share storage with the module: clone them to keep a snapshot.
  StateDict state_dict() const;
  /// Copies values from `state` into the parameters and buffers in place (converting dtype if
  /// needed). Shape mismatches always throw, naming the entry and both shapes. With strict,
  /// entries missing from `state` and entries of `state` the module does not have also throw
  /// (all of them listed in one message); without strict they are ignored.
  void load_state_dict(const StateDict& state, bool strict = true);

 protected:
  /// Hook for subclasses that cache something depending on the mode; called by train().
  virtual void on_train_mode_changed(bool training) {}

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect_parameters(const std::string& prefix,
                          std::vector<std::pair<std::string, Variable>>& out) const;
  void collect_buffers(const std::string& prefix,
                       std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  void collect_modules(const std::string& prefix,
                       std::vector<std::pair<std::string, Module*>>& out);

  std::vector<std::pair<std::string, Variable>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

/// "weights", "biases", "norms", "embeddings", "positional".
const char* parameter_role_name(ParameterRole role);

/// Every trainable parameter (frozen ones left out) with its role, in named_parameters() order:
/// the role of the deepest module above it that decides one, else kWeight for tensors of rank
/// >= 2 and kBias for the rest.
std::vector<std::pair<std::string, ParameterRole>> parameter_roles(Module& model);

}  // namespace rota::nn
