// Variable: a tensor that takes part in reverse-mode differentiation.
#pragma once

#include <memory>
#include <string>

#include "framework/autograd/node.h"
#include "framework/tensor/tensor.h"

namespace rota {

/// Shared state of a Variable (all copies of a Variable refer to one impl).
struct VariableImpl {
  Tensor data;
  Tensor grad;  // leaves only: accumulated gradient (undefined until the first backward)
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;                     // null for leaves
  int output_nr = 0;                                 // which output of grad_fn this is
  std::shared_ptr<AccumulateGrad> grad_accumulator;  // leaves that require grad
};

/// A differentiable tensor. Copies share state (like a torch.Tensor with requires_grad).
/// Results of ops on Variables record how they were computed; backward() walks that record
/// in reverse topological order and accumulates gradients into the leaves' .grad().
class Variable {
 public:
  /// An undefined variable.
  Variable() = default;
  /// A leaf wrapping `data` (no copy).
  explicit Variable(Tensor data, bool requires_grad = false);
  /// A non-leaf produced by `grad_fn` at output slot `output_nr`.
  static Variable from_op(Tensor data, std::shared_ptr<Node> grad_fn, int output_nr);

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;
  /// Replaces the values (same shape/dtype); for optimizers and loading, never on the graph.
  void set_data(const Tensor& data);
  const Shape& shape() const { return data().shape(); }
  DType dtype() const { return data().dtype(); }
  int64_t dim() const { return data().dim(); }
  int64_t size(int64_t d) const { return data().size(d); }
  int64_t numel() const { return data().numel(); }
  double item() const { return data().item(); }

  bool requires_grad() const;
  /// Only valid on leaves.
  Variable& set_requires_grad(bool requires_grad);
  bool is_leaf() const;
  const std::shared_ptr<Node>& grad_fn() const;
  int output_nr() const;

  /// Accumulated gradient of a leaf (undefined before any backward reached it).
  const Tensor& grad() const;
  void set_grad(const Tensor& grad);
  /// Drops the accumulated gradient.
  void zero_grad();

  /// Differentiates this variable. With no grad_output it must hold one element (a loss) and
  /// the seed is 1. retain_graph keeps saved tensors so backward can run again.
  void backward(const Tensor& grad_output = Tensor(), bool retain_graph = false) const;

  /// The same values, cut from the graph (a new leaf sharing storage).
  Variable detach() const;

  /// Edge along which gradients for this variable flow (null node if none needed).
  Edge gradient_edge() const;
  VariableImpl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<VariableImpl> impl_;
};

/// Runs backward from several roots at once (e.g. two losses), accumulating into leaves.
void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& grad_outputs,
                  bool retain_graph);

}  // namespace rota
