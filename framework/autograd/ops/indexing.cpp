// Indexing ops: forward through the backend's gather/select/mask kernels, backward through
// their adjoints (scatter-add, index-add, masking of the gradient).
#include "framework/autograd/ops/indexing.h"

#include "framework/autograd/function.h"
#include "framework/backend/primitives/elementwise.h"
#include "framework/backend/primitives/indexing.h"

namespace rota {

namespace b = backend;

Variable gather(const Variable& x, int64_t axis, const Tensor& index) {
  Tensor out = b::gather(x.data(), axis, index);
  if (!inspect_inputs({x}).any) return Variable(std::move(out), false);
  // g: index's shape; grad_x: x's shape, grad_x[.., index[p], ..] += g[p] along axis.
  return record_op("gather", std::move(out), {x},
                   [shape = x.shape(), axis, index](const Tensor& g) -> std::vector<Tensor> {
                     return {b::scatter_add(shape, axis, index, g)};
                   });
}

Variable index_select(const Variable& x, int64_t axis, const Tensor& index) {
  Tensor out = b::index_select(x.data(), axis, index);
  if (!inspect_inputs({x}).any) return Variable(std::move(out), false);
  // g: x's shape with dim axis = len(index); grad_x.select(axis, index[j]) += g.select(axis, j).
  return record_op("index_select", std::move(out), {x},
                   [shape = x.shape(), axis, index](const Tensor& g) -> std::vector<Tensor> {
                     return {b::index_add(shape, axis, index, g)};
                   });
}

Variable masked_fill(const Variable& x, const Tensor& mask, double value) {
  Tensor out = b::masked_fill(x.data(), mask, value);
  if (!inspect_inputs({x}).any) return Variable(std::move(out), false);
  // g, grad_x: x's shape; grad_x = mask ? 0 : g (filled elements do not depend on x).
  return record_op(
      "masked_fill", std::move(out), {x},
      [mask](const Tensor& g) -> std::vector<Tensor> { return {b::masked_fill(g, mask, 0.0)}; });
}

Variable where(const Tensor& cond, const Variable& a, const Variable& bv) {
  Tensor out = b::where(cond, a.data(), bv.data());
  const auto rec = inspect_inputs({a, bv});
  if (!rec.any) return Variable(std::move(out), false);
  // g: broadcast shape; grad_a = sum_to_shape(cond ? g : 0), grad_b = sum_to_shape(cond ? 0 : g).
  return record_op("where", std::move(out), {a, bv},
                   [needs = rec.needs, cond, sa = a.shape(), sb = bv.shape()](const Tensor& g) {
                     const Tensor zero = scalar_tensor(0.0, g.dtype());
                     return std::vector<Tensor>{
                         needs[0] ? b::sum_to_shape(b::where(cond, g, zero), sa) : Tensor(),
                         needs[1] ? b::sum_to_shape(b::where(cond, zero, g), sb) : Tensor()};
                   });
}

Variable tril(const Variable& x, int64_t k) {
  // g, grad_x: x's shape; grad_x = tril(g, k): the kept elements pass their gradient.
  return record_op("tril", b::tril(x.data(), k), {x},
                   [k](const Tensor& g) -> std::vector<Tensor> { return {b::tril(g, k)}; });
}

Variable triu(const Variable& x, int64_t k) {
  // g, grad_x: x's shape; grad_x = triu(g, k).
  return record_op("triu", b::triu(x.data(), k), {x},
                   [k](const Tensor& g) -> std::vector<Tensor> { return {b::triu(g, k)}; });
}

}  // namespace rota
