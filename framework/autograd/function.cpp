// record_op: attaches a backward closure to an op's output when gradients are needed.
#include "framework/autograd/function.h"

#include "framework/autograd/grad_mode.h"

namespace rota {

OpRecord inspect_inputs(const std::vector<Variable>& inputs) {
  OpRecord record;
  record.needs.resize(inputs.size(), false);
  if (!grad_enabled()) return record;
  for (size_t i = 0; i < inputs.size(); ++i) {
    record.needs[i] = inputs[i].defined() && inputs[i].requires_grad();
    record.any = record.any || record.needs[i];
  }
  return record;
}

namespace {
std::vector<Edge> collect_edges(const std::vector<Variable>& inputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Variable& v : inputs) edges.push_back(v.defined() ? v.gradient_edge() : Edge{});
  return edges;
}
}  // namespace

Variable record_op(const char* name, Tensor output, const std::vector<Variable>& inputs,
                   std::function<std::vector<Tensor>(const Tensor& grad_output)> backward) {
  if (!inspect_inputs(inputs).any) return Variable(std::move(output), false);
  const Shape shape = output.shape();
  const DType dtype = output.dtype();
  auto node = std::make_shared<Node>(
      name, collect_edges(inputs),
      [fn = std::move(backward)](const std::vector<Tensor>& grads) { return fn(grads[0]); },
      std::vector<Shape>{shape}, dtype);
  return Variable::from_op(std::move(output), std::move(node), 0);
}

std::vector<Variable> record_multi_output_op(const char* name, std::vector<Tensor> outputs,
                                             const std::vector<Variable>& inputs,
                                             BackwardFn backward) {
  std::vector<Variable> result;
  if (!inspect_inputs(inputs).any) {
    for (auto& t : outputs) result.emplace_back(std::move(t), false);
    return result;
  }
  std::vector<Shape> shapes;
  for (const auto& t : outputs) shapes.push_back(t.shape());
  auto node = std::make_shared<Node>(name, collect_edges(inputs), std::move(backward),
                                     std::move(shapes), outputs.at(0).dtype());
  for (size_t i = 0; i < outputs.size(); ++i) {
    result.push_back(Variable::from_op(std::move(outputs[i]), node, static_cast<int>(i)));
  }
  return result;
}

}  // namespace rota
