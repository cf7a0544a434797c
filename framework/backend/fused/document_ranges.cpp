// Segment ids [B, N] → each row's document ranges, checked.
#include "framework/backend/fused/document_ranges.h"

#include <set>

#include "framework/base/error.h"

namespace rota::backend {

DocumentRanges::DocumentRanges(const char* op, const Tensor& segment_ids, int64_t groups,
                               int64_t n) {
  if (!segment_ids.defined()) return;
  ROTA_CHECK(segment_ids.dim() == 2 && segment_ids.size(1) == n,
             "{}: segment ids {} do not fit sequences of {} (expected [B, {}])", op,
             shape_str(segment_ids.shape()), n, n);
  ROTA_CHECK(segment_ids.dtype() == DType::kI64 || segment_ids.dtype() == DType::kI32,
             "{}: segment ids must be integers, got {}", op, dtype_name(segment_ids.dtype()));
  const int64_t batch = segment_ids.size(0);
  ROTA_CHECK(batch >= 1 && groups % batch == 0,
             "{}: segment ids for {} rows do not divide the {} slices", op, batch, groups);
  per_row_ = groups / batch;
  const Tensor ids = segment_ids.to(DType::kI64).contiguous();
  const int64_t* at = ids.data<int64_t>();
  rows_.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t* row = at + b * n;
    std::set<int64_t> seen;
    for (int64_t t = 0; t < n; ++t) {
      if (t > 0 && row[t] == row[t - 1]) continue;
      ROTA_CHECK(seen.insert(row[t]).second,
                 "{}: segment id {} appears again at position {} of row {} after another "
                 "document; a document's tokens must be contiguous",
                 op, row[t], t, b);
      if (t > 0) rows_[b].back().end = t;
      rows_[b].push_back({t, n});
    }
  }
}

}  // namespace rota::backend
