// Graph nodes of the dynamic tape: one per recorded op, holding its backward closure.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota {

class Node;
struct VariableImpl;

/// Where a gradient flows: output slot `input_nr` of `node`. A null node means the input needs
/// no gradient.
struct Edge {
  std::shared_ptr<Node> node;
  int input_nr = 0;
};

/// Gradients for the op's outputs in, gradients for its inputs out (one per input, undefined
/// where needs_input_grad is false). Captures only the tensors the backward needs.
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

/// A recorded operation. Its outputs are the Variables whose grad_fn is this node; its inputs
/// are `next_edges`. Leaf variables that require grad are reached through an AccumulateGrad
/// node, which adds the incoming gradient into the leaf's .grad.
class Node {
 public:
  Node(std::string name, std::vector<Edge> next_edges, BackwardFn backward,
       std::vector<Shape> output_shapes, DType dtype);
  /// Releases the chain of nodes behind this one iteratively (see node.cpp).
  virtual ~Node();

  const std::string& name() const { return name_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  const Shape& output_shape(int i) const { return output_shapes_[i]; }
  DType dtype() const { return dtype_; }
  /// True when input i needs a gradient.
  bool needs_input_grad(int i) const { return next_edges_[i].node != nullptr; }

  /// Runs the backward. Missing (undefined) output gradients are passed as zeros.
  virtual std::vector<Tensor> apply(std::vector<Tensor> grad_outputs);
  /// Frees the closure and everything it saved; apply() afterwards throws.
  virtual void release();
  bool released() const { return released_; }

 protected:
  std::string name_;
  std::vector<Edge> next_edges_;
  BackwardFn backward_;
  std::vector<Shape> output_shapes_;
  DType dtype_;
  bool released_ = false;
};

/// Sink node of a leaf that requires grad: accumulates (+=) into the leaf's grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<VariableImpl> leaf);
  std::vector<Tensor> apply(std::vector<Tensor> grad_outputs) override;
  void release() override {}

 private:
  std::weak_ptr<VariableImpl> leaf_;
};

}  // namespace rota
