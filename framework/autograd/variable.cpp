// Variable accessors and the backward engine (dependency-counted reverse topological walk).
#include "framework/autograd/variable.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "framework/backend/primitives/elementwise.h"

namespace rota {

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  ROTA_CHECK(data.defined(), "Variable: data tensor is undefined");
  impl_->data = std::move(data);
  set_requires_grad(requires_grad);
}

Variable Variable::from_op(Tensor data, std::shared_ptr<Node> grad_fn, int output_nr) {
  Variable v;
  v.impl_ = std::make_shared<VariableImpl>();
  v.impl_->data = std::move(data);
  v.impl_->requires_grad = true;
  v.impl_->grad_fn = std::move(grad_fn);
  v.impl_->output_nr = output_nr;
  return v;
}

const Tensor& Variable::data() const {
  ROTA_CHECK(defined(), "Variable: undefined");
  return impl_->data;
}

void Variable::set_data(const Tensor& data) {
  ROTA_CHECK(defined(), "Variable: undefined");
  ROTA_CHECK(data.shape() == impl_->data.shape() && data.dtype() == impl_->data.dtype(),
             "set_data: {} {} replaces {} {}", dtype_name(data.dtype()), shape_str(data.shape()),
             dtype_name(impl_->data.dtype()), shape_str(impl_->data.shape()));
  impl_->data = data;
}

bool Variable::requires_grad() const {
  return defined() && impl_->requires_grad;
}

Variable& Variable::set_requires_grad(bool requires_grad) {
  ROTA_CHECK(is_leaf(), "set_requires_grad: only leaf variables can change requires_grad");
  if (requires_grad) {
    ROTA_CHECK(is_floating(impl_->data.dtype()),
               "set_requires_grad: dtype {} cannot require gradients",
               dtype_name(impl_->data.dtype()));
  }
  impl_->requires_grad = requires_grad;
  if (!requires_grad) impl_->grad_accumulator.reset();
  return *this;
}

bool Variable::is_leaf() const {
  return defined() && impl_->grad_fn == nullptr;
}

const std::shared_ptr<Node>& Variable::grad_fn() const {
  static const std::shared_ptr<Node> kNone;  // an undefined variable has no grad_fn
  return defined() ? impl_->grad_fn : kNone;
}

int Variable::output_nr() const {
  return defined() ? impl_->output_nr : 0;
}

const Tensor& Variable::grad() const {
  ROTA_CHECK(defined(), "grad: undefined variable");
  return impl_->grad;
}

void Variable::set_grad(const Tensor& grad) {
  ROTA_CHECK(defined(), "set_grad: undefined variable");
  // A grad of another shape would be broadcast into (or fail in) later accumulation.
  ROTA_CHECK(!grad.defined() ||
                 (grad.shape() == impl_->data.shape() && grad.dtype() == impl_->data.dtype()),
             "set_grad: gradient {} {} for variable {} {}", dtype_name(grad.dtype()),
             shape_str(grad.shape()), dtype_name(impl_->data.dtype()),
             shape_str(impl_->data.shape()));
  impl_->grad = grad;
}

void Variable::zero_grad() {
  ROTA_CHECK(defined(), "zero_grad: undefined variable");
  impl_->grad = Tensor();
}

Edge Variable::gradient_edge() const {
  if (!requires_grad()) return Edge{};
  if (impl_->grad_fn) return Edge{impl_->grad_fn, impl_->output_nr};
  if (!impl_->grad_accumulator) impl_->grad_accumulator = std::make_shared<AccumulateGrad>(impl_);
  return Edge{impl_->grad_accumulator, 0};
}

Variable Variable::detach() const {
  return Variable(data(), false);
}

void Variable::backward(const Tensor& grad_output, bool retain_graph) const {
  run_backward({*this}, {grad_output}, retain_graph);
}

void run_backward(const std::vector<Variable>& roots, const std::vector<Tensor>& grad_outputs,
                  bool retain_graph) {
  ROTA_CHECK(roots.size() == grad_outputs.size(), "backward: {} roots but {} gradients",
             roots.size(), grad_outputs.size());
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::vector<std::shared_ptr<Node>> root_nodes;

  auto accumulate = [&](Node* node, int slot, const Tensor& g) {
    auto& buffer = buffers[node];
    if (buffer.empty()) buffer.resize(node->num_outputs());
    ROTA_CHECK(g.shape() == node->output_shape(slot),
               "backward: gradient of shape {} arrives for output {} of shape {} of '{}'",
               shape_str(g.shape()), slot, shape_str(node->output_shape(slot)), node->name());
    buffer[slot] = buffer[slot].defined() ? backend::add(buffer[slot], g) : g;
  };

  for (size_t i = 0; i < roots.size(); ++i) {
    const Variable& root = roots[i];
    ROTA_CHECK(root.requires_grad(),
               "backward: the tensor does not require grad (no input of its graph does)");
    Tensor seed = grad_outputs[i];
    if (!seed.defined()) {
      ROTA_CHECK(root.numel() == 1,
                 "backward: an implicit gradient needs a one-element output, got {}",
                 shape_str(root.shape()));
      seed = ones(root.shape(), root.dtype());
    }
    ROTA_CHECK(seed.shape() == root.shape() && seed.dtype() == root.dtype(),
               "backward: gradient {} {} for output {} {}", dtype_name(seed.dtype()),
               shape_str(seed.shape()), dtype_name(root.dtype()), shape_str(root.shape()));
    const Edge edge = root.gradient_edge();
    accumulate(edge.node.get(), edge.input_nr, seed);
    root_nodes.push_back(edge.node);
  }

  // Count, for every reachable node, how many edges point at it.
  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const auto& n : root_nodes) {
    if (seen.insert(n.get()).second) stack.push_back(n.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next_edges()) {
      if (!e.node) continue;
      ++dependencies[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }

  // Kahn's algorithm: a node runs once every consumer has delivered its gradient.
  std::vector<std::shared_ptr<Node>> ready;
  std::unordered_set<Node*> queued;
  for (const auto& n : root_nodes) {
    if (dependencies[n.get()] == 0 && queued.insert(n.get()).second) ready.push_back(n);
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.back();
    ready.pop_back();
    std::vector<Tensor> grads = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    if (grads.empty()) grads.resize(node->num_outputs());
    std::vector<Tensor> input_grads = node->apply(std::move(grads));
    if (!retain_graph) node->release();
    const auto& edges = node->next_edges();
    // A backward that returns too few gradients would silently starve the remaining inputs.
    ROTA_CHECK(input_grads.size() == edges.size(),
               "backward: '{}' returned {} gradients for its {} inputs", node->name(),
               input_grads.size(), edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.node) continue;
      if (input_grads[i].defined()) {
        // Checked here, where the op that produced the gradient is known, so the message names
        // the culprit rather than the receiving node.
        const Tensor& g = input_grads[i];
        const Shape& expected = e.node->output_shape(e.input_nr);
        ROTA_CHECK(g.shape() == expected && g.dtype() == e.node->dtype(),
                   "backward: '{}' returned a gradient {} {} for input {} of {} {}", node->name(),
                   dtype_name(g.dtype()), shape_str(g.shape()), i, dtype_name(e.node->dtype()),
                   shape_str(expected));
        accumulate(e.node.get(), e.input_nr, g);
      }
      if (--dependencies[e.node.get()] == 0) ready.push_back(e.node);
    }
  }
}

}  // namespace rota
