// Embedding gather and scatter-add kernels.
#include "framework/backend/primitives/embedding.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::backend {

namespace {

// Columns per work item in the backward: 16 floats = one 64-byte cache line, so two threads
// never write the same line of grad_weight (no false sharing).
constexpr int64_t kColumnBlock = 16;

// ids as a flat contiguous i64 vector, every id checked against [0, V) before any kernel
// reads memory with it (a bad id must be an error, never a wild read or write).
std::vector<int64_t> checked_ids(const char* op, const Tensor& ids, int64_t num_embeddings) {
  const Tensor dense = ids.contiguous();
  std::vector<int64_t> flat(dense.numel());
  dispatch_index(dense.dtype(), op, [&](auto tag) {
    using I = decltype(tag);
    const I* data = dense.data<I>();
    for (size_t p = 0; p < flat.size(); ++p) flat[p] = static_cast<int64_t>(data[p]);
  });
  for (size_t p = 0; p < flat.size(); ++p) {
    ROTA_CHECK(flat[p] >= 0 && flat[p] < num_embeddings,
               "{}: id {} at position {} of ids {} is out of range for V = {}", op, flat[p], p,
               shape_str(ids.shape()), num_embeddings);
  }
  return flat;
}

}  // namespace

Tensor embedding(const Tensor& ids, const Tensor& weight) {
  ROTA_CHECK(ids.defined() && weight.defined(), "embedding: undefined ids or weight");
  ROTA_CHECK(weight.dim() == 2, "embedding: weight {} must be [V, D]", shape_str(weight.shape()));
  ROTA_CHECK(is_floating(weight.dtype()), "embedding: weight dtype {} is not floating",
             dtype_name(weight.dtype()));
  const int64_t vocab = weight.size(0);
  const int64_t dim = weight.size(1);
  const std::vector<int64_t> flat = checked_ids("embedding", ids, vocab);
  Shape out_shape = ids.shape();
  out_shape.push_back(dim);
  Tensor out = Tensor::empty(out_shape, weight.dtype());
  if (out.numel() == 0) return out;

  // out: [P, D] rows copied from weight: [V, D]. Rows are contiguous, so a row is one memcpy
  // whatever the dtype.
  const Tensor table = weight.contiguous();
  const size_t row_bytes = static_cast<size_t>(dim) * dtype_size(weight.dtype());
  const char* src = static_cast<const char*>(table.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int64_t positions = static_cast<int64_t>(flat.size());
  parallel_for(positions, dim, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      std::memcpy(dst + p * row_bytes, src + flat[p] * row_bytes, row_bytes);
    }
  });
  return out;
}

Tensor embedding_backward(const Tensor& ids, const Tensor& grad_out, int64_t num_embeddings,
                          std::optional<int64_t> padding_idx) {
  ROTA_CHECK(ids.defined() && grad_out.defined(), "embedding_backward: undefined ids or grad");
  ROTA_CHECK(grad_out.dim() == ids.dim() + 1 &&
                 Shape(grad_out.shape().begin(), grad_out.shape().end() - 1) == ids.shape(),
             "embedding_backward: grad {} does not match ids {} (expected ids shape + [D])",
             shape_str(grad_out.shape()), shape_str(ids.shape()));
  ROTA_CHECK(num_embeddings >= 0, "embedding_backward: negative num_embeddings {}", num_embeddings);
  ROTA_CHECK(!padding_idx || (*padding_idx >= 0 && *padding_idx < num_embeddings),
             "embedding_backward: padding_idx {} is out of range for {} embeddings",
             padding_idx.value_or(-1), num_embeddings);
  const std::vector<int64_t> flat = checked_ids("embedding_backward", ids, num_embeddings);
  const int64_t dim = grad_out.size(-1);
  const int64_t skip = padding_idx.value_or(-1);

  return dispatch_floating(grad_out.dtype(), "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    Tensor grad_weight = zeros({num_embeddings, dim}, grad_out.dtype());
    if (grad_weight.numel() == 0 || flat.empty()) return grad_weight;
    // grad_out: [P, D] → grad_weight: [V, D]; grad_weight[ids[p], d] += grad_out[p, d].
    // Threads split the D columns (not the positions): every element of grad_weight has one
    // owner that adds its contributions in position order, so no atomics and bit-identical
    // results whatever the thread count.
    const Tensor grad = grad_out.contiguous();
    const T* g = grad.data<T>();
    T* gw = grad_weight.data<T>();
    const int64_t positions = static_cast<int64_t>(flat.size());
    const int64_t column_blocks = (dim + kColumnBlock - 1) / kColumnBlock;
    parallel_for(column_blocks, positions * kColumnBlock, [&](int64_t begin, int64_t end) {
      const int64_t d0 = begin * kColumnBlock;
      const int64_t d1 = std::min(dim, end * kColumnBlock);
      for (int64_t p = 0; p < positions; ++p) {
        const int64_t id = flat[p];
        if (id == skip) continue;
        T* row = gw + id * dim;
        const T* src = g + p * dim;
        for (int64_t d = d0; d < d1; ++d) row[d] += src[d];
      }
    });
    return grad_weight;
  });
}

}  // namespace rota::backend
