// The carried states of the causal attention kernels (see attention_state.h).
#include "framework/backend/fused/attention_state.h"

#include "framework/base/error.h"

namespace rota::backend {

Shape attention_state_shape(const Tensor& q, const Tensor& v) {
  Shape shape = q.shape();
  shape[shape.size() - 2] = q.size(-1);
  shape.back() = v.size(-1);
  return shape;
}

Tensor dense_attention_state(const char* op, const char* what, const Tensor& state, const Tensor& q,
                             const Tensor& v) {
  if (!state.defined()) return state;
  const Shape want = attention_state_shape(q, v);
  ROTA_CHECK(state.shape() == want && state.dtype() == q.dtype(),
             "{}: {} is {} {}, expected {} {} (q {}, v {})", op, what, dtype_name(state.dtype()),
             shape_str(state.shape()), dtype_name(q.dtype()), shape_str(want), shape_str(q.shape()),
             shape_str(v.shape()));
  return state.contiguous();
}

}  // namespace rota::backend
