// Activation recomputation: run a function without saving its internals, run it again in the
// backward.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "framework/autograd/variable.h"
#include "framework/tensor/random.h"

namespace rota {

/// y = fn(input), recorded as one node that saves only `input` (not fn's internals). Its
/// backward runs fn again on the saved input with recording on and backpropagates the output
/// gradient through that second graph: the input's gradient is returned to the outer graph and
/// every parameter fn uses accumulates its gradient as it would without recomputation, so the
/// gradients are those of a plain fn(input) (the same ops on the same values, bit for bit),
/// at the cost of one more forward pass of fn.
///
/// `parameters` are the trainable tensors fn reads besides `input` (a module's parameters()):
/// they make the node part of the graph when the input itself needs no gradient. `rng` is the
/// generator fn draws from (dropout), or null (kept alive with the graph): its state before the
/// first run is restored for the second, so both draw the same masks, and the state after the
/// backward is what it was before it (the stream continues as without recomputation). The matmul
/// precision of the first run is used for the second.
///
/// Without grad mode, or when neither the input nor a parameter needs a gradient, this is
/// fn(input). fn must be deterministic given its input, parameters and rng state, and must
/// return a Variable computed from them.
Variable recomputed(const char* name, const std::function<Variable(const Variable&)>& fn,
                    const Variable& input, const std::vector<Variable>& parameters,
                    std::shared_ptr<Generator> rng);

/// The same for several inputs and outputs: outputs = fn(inputs), one node saving only the
/// inputs. An input may be an undefined Variable: fn receives it undefined in both runs and it
/// gets no gradient. The backward reruns fn and backpropagates every output's gradient (zeros
/// for outputs the outer graph did not use) through the second graph at once. Used to run a
/// long sequence segment by segment with only the carried states kept between segments.
std::vector<Variable> recomputed(
    const char* name, const std::function<std::vector<Variable>(const std::vector<Variable>&)>& fn,
    const std::vector<Variable>& inputs, const std::vector<Variable>& parameters,
    std::shared_ptr<Generator> rng);

}  // namespace rota
