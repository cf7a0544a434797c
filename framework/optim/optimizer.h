// Optimizer base: parameter groups, per-parameter state by name (for checkpoints), lr control.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "framework/autograd/variable.h"
#include "framework/tensor/tensor.h"

namespace rota::optim {

/// Parameters that share hyperparameters (e.g. "decay" for matrices, "no_decay" for biases and
/// norm gains).
struct ParamGroup {
  std::vector<Variable> params;
  /// Checkpoint names of `params` (same length), usually from Module::named_parameters().
  /// Empty: "<name>.<i>" (or "group<g>.<i>" when the group has no name).
  std::vector<std::string> param_names;
  /// Learning rate this group uses now. set_lr() overwrites it with lr * lr_multiplier.
  double lr = 1e-3;
  double weight_decay = 0.0;
  /// This group's lr relative to the optimizer-wide lr set by set_lr (schedules).
  double lr_multiplier = 1.0;
  std::string name;
};

/// An unnamed group holding `params` (checkpoint names "group<g>.<i>", g its index).
ParamGroup make_param_group(std::vector<Variable> params, double lr, double weight_decay);

/// Splits named parameters into two groups in the usual way (GPT-2 / nanoGPT): tensors of rank
/// >= 2 (matrices, embeddings) get `weight_decay` ("decay"); rank < 2 tensors (biases, norm
/// gains and offsets) get none ("no_decay"). Frozen parameters (requires_grad false) are left
/// out; empty groups are omitted. Names are kept for checkpointing.
std::vector<ParamGroup> decay_param_groups(
    const std::vector<std::pair<std::string, Variable>>& named_params, double lr,
    double weight_decay);

/// Per-parameter optimizer state.
struct ParamState {
  int64_t step = 0;  // updates applied to this parameter (params without a grad are not counted)
  std::map<std::string, Tensor> buffers;  // suffix ("exp_avg", ...) -> tensor shaped like param
};

/// Base of SGD and Adam(W). step() visits every parameter that has a gradient and applies the
/// subclass's update in place on the parameter's storage; parameters without a gradient
/// (frozen, or unused in this forward) are skipped and keep their state untouched.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient.
  void step();
  /// Drops every parameter's gradient.
  void zero_grad();

  /// Sets every group's lr to lr * group.lr_multiplier (what schedules call each step).
  void set_lr(double lr);
  /// The optimizer-wide lr last given to set_lr (before that: group 0's lr / multiplier).
  double lr() const { return lr_; }

  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// Mutable access to a group's lr, weight_decay and lr_multiplier; its parameter list is
  /// fixed at construction.
  ParamGroup& param_group(size_t index);
  /// Number of step() calls so far (restored by load_state).
  int64_t step_count() const { return step_count_; }
  /// The name of the optimizer ("SGD", "Adam", "AdamW").
  virtual const char* name() const = 0;

  /// Every state tensor by name, for checkpoints: "step" (i64 scalar: step_count()), and per
  /// parameter that has state "<param>.step" (i64 scalar) and "<param>.<suffix>" for each
  /// buffer (e.g. ".exp_avg", ".exp_avg_sq", ".momentum_buffer"). Parameters in group order.
  /// The tensors are the live state: clone them to keep a snapshot.
  std::vector<std::pair<std::string, Tensor>> state_tensors() const;
  /// Replaces all state with `state` (the form state_tensors() gives; tensors are copied and
  /// converted to the parameter dtype). Parameters absent from `state` start fresh. Unknown
  /// names, unknown suffixes and shape mismatches throw (naming the entry and both shapes)
  /// before anything is changed.
  void load_state(const std::vector<std::pair<std::string, Tensor>>& state);

 protected:
  Optimizer(std::vector<ParamGroup> groups, const char* optimizer_name);

  /// Applies one update in place. param: the parameter's data (contiguous, f32/f64);
  /// grad: same shape and dtype, contiguous; state.step already counts this update.
  virtual void update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                      ParamState& state) = 0;
  /// Buffer suffixes this optimizer may keep (checked by load_state).
  virtual std::vector<std::string> state_suffixes() const = 0;

 private:
  struct Slot {
    std::string name;
    Variable param;
    size_t group;
    ParamState state;
  };

  std::vector<ParamGroup> groups_;
  std::vector<Slot> slots_;  // every parameter, in group order
  int64_t step_count_ = 0;
  double lr_ = 0.0;
};

}  // namespace rota::optim
