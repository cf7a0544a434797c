// Node and AccumulateGrad: running a recorded op's backward and summing into leaves.
#include "framework/autograd/node.h"

#include "framework/autograd/variable.h"
#include "framework/backend/primitives/elementwise.h"

namespace rota {

Node::Node(std::string name, std::vector<Edge> next_edges, BackwardFn backward,
           std::vector<Shape> output_shapes, DType dtype)
    : name_(std::move(name)),
      next_edges_(std::move(next_edges)),
      backward_(std::move(backward)),
      output_shapes_(std::move(output_shapes)),
      dtype_(dtype) {}

Node::~Node() {
  // Dropping the last reference to a long chain would otherwise destroy it recursively (each
  // node's edge vector drops the next node from inside this destructor), using stack in
  // proportion to the graph depth and overflowing for deep graphs (e.g. 100k+ ops, or ~10k
  // under sanitizers). Instead, successors this node owns alone are moved to a worklist and
  // stripped of their own edges before they die, so no destructor recurses.
  std::vector<std::shared_ptr<Node>> pending;
  auto take_edges = [&pending](std::vector<Edge>& edges) {
    for (Edge& e : edges) {
      if (e.node) pending.push_back(std::move(e.node));
    }
    edges.clear();
  };
  take_edges(next_edges_);
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    // use_count() == 1: nobody else (another graph, a live Variable) keeps it alive.
    if (node.use_count() == 1) take_edges(node->next_edges_);
  }
}

std::vector<Tensor> Node::apply(std::vector<Tensor> grad_outputs) {
  ROTA_CHECK(!released_,
             "backward: the graph through '{}' was already freed by an earlier backward; "
             "pass retain_graph=true to the first backward to run it twice",
             name_);
  for (int i = 0; i < num_outputs(); ++i) {
    if (!grad_outputs[i].defined()) grad_outputs[i] = zeros(output_shapes_[i], dtype_);
  }
  return backward_(grad_outputs);
}

void Node::release() {
  backward_ = nullptr;
  released_ = true;
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<VariableImpl> leaf)
    : Node("AccumulateGrad", {}, nullptr, {leaf->data.shape()}, leaf->data.dtype()), leaf_(leaf) {}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor> grad_outputs) {
  auto leaf = leaf_.lock();
  if (!leaf || !grad_outputs[0].defined()) return {};
  const Tensor& g = grad_outputs[0];
  if (!leaf->grad.defined()) {
    // Own a private copy: the incoming tensor may be shared with other gradients, and
    // optimizers and clipping modify .grad in place.
    leaf->grad = g.clone();
  } else if (!leaf->grad.is_contiguous()) {
    // A grad installed with set_grad may be a strided view; add_inplace needs a contiguous
    // destination.
    leaf->grad = backend::add(leaf->grad, g);
  } else {
    backend::add_inplace(leaf->grad, g);
  }
  return {};
}

}  // namespace rota
