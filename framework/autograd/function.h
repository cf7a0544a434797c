// Recording an op on the tape: the one helper every differentiable op uses.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "framework/autograd/variable.h"

namespace rota {

/// Records a single-output op. When grad mode is off or no input requires grad, the closure
/// is dropped at once (nothing is saved) and a plain leaf is returned.
/// `backward` receives the output gradient and returns one gradient per input (undefined for
/// inputs that need none; check `needs` to skip the work).
struct OpRecord {
  std::vector<bool> needs;  // needs[i]: input i needs a gradient
  bool any = false;         // any input needs a gradient (and grad mode is on)
};

/// Which inputs need gradients: call first, so the op can skip saving tensors when none do.
OpRecord inspect_inputs(const std::vector<Variable>& inputs);

/// Wraps `output` as the result of op `name` with inputs `inputs`.
Variable record_op(const char* name, Tensor output, const std::vector<Variable>& inputs,
                   std::function<std::vector<Tensor>(const Tensor& grad_output)> backward);

/// Multi-output form (split, chunk...): one Variable per output, sharing one node.
std::vector<Variable> record_multi_output_op(const char* name, std::vector<Tensor> outputs,
                                             const std::vector<Variable>& inputs,
                                             BackwardFn backward);

}  // namespace rota
