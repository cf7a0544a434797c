// Records the skew / unskew kernel pair on the tape; relative_logits composes matmul and skew.
#include "framework/autograd/ops/relative_shift.h"

#include <utility>

#include "framework/autograd/function.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/backend/primitives/relative_shift.h"

namespace rota {

Variable relative_shift(const Variable& x, int64_t n_k, std::vector<int64_t> column_map) {
  Tensor out = backend::relative_shift_forward(x.data(), n_k, column_map);
  const OpRecord rec = inspect_inputs({x});
  if (!rec.any) return Variable(std::move(out), false);
  return record_op("relative_shift", out, {x},
                   [n_x = x.size(-1), map = std::move(column_map)](const Tensor& grad) {
                     return std::vector<Tensor>{backend::relative_shift_backward(grad, n_x, map)};
                   });
}

Variable relative_unshift(const Variable& s, int64_t n_x, std::vector<int64_t> column_map) {
  Tensor out = backend::relative_shift_backward(s.data(), n_x, column_map);
  const OpRecord rec = inspect_inputs({s});
  if (!rec.any) return Variable(std::move(out), false);
  return record_op("relative_unshift", out, {s},
                   [n_k = s.size(-1), map = std::move(column_map)](const Tensor& grad) {
                     return std::vector<Tensor>{backend::relative_shift_forward(grad, n_k, map)};
                   });
}

Variable relative_logits(const Variable& q, const Variable& rows, int64_t n_k,
                         std::vector<int64_t> column_map) {
  ROTA_CHECK(q.dim() == 4, "relative_logits: q {} must be [B, H, n_q, D]", shape_str(q.shape()));
  ROTA_CHECK((rows.dim() == 2 || (rows.dim() == 3 && rows.size(0) == q.size(1))) &&
                 rows.size(-1) == q.size(-1),
             "relative_logits: rows {} must be [n_x, D] or [H, n_x, D] for q {}",
             shape_str(rows.shape()), shape_str(q.shape()));
  // X = q·rowsᵀ: [B, H, n_q, n_x]. A shared [n_x, D] table is one product over all B·H·n_q
  // query rows; a per-head [H, n_x, D] table broadcasts over the batch.
  const Variable x = matmul(q, rows, false, true);
  return relative_shift(x, n_k, std::move(column_map));
}

}  // namespace rota
