// Data-movement kernels. Pure copies move raw bits (one instantiation per element width serves
// every dtype); the scatter kernels partition over output rows/columns so no two threads ever
// write the same element, which keeps them deterministic without atomics.
#include "framework/backend/primitives/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::backend {

namespace {

// Calls f(W{}) with an unsigned integer type as wide as one element of `dtype`: copying bits
// is all a data-movement kernel does, so f32/i32, f64/i64 and bf16 share three instantiations.
template <typename F>
void dispatch_by_width(DType dtype, const char* op, F&& f) {
  switch (dtype_size(dtype)) {
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    case 8:
      f(uint64_t{});
      return;
    default:
      fail("{}: dtype {} has an unsupported element size", op, dtype_name(dtype));
  }
}

// Calls f(T{}) with the C++ element type of any dtype (for kernels that read or convert values).
template <typename F>
void dispatch_any(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      f(float{});
      return;
    case DType::kF64:
      f(double{});
      return;
    case DType::kBF16:
      f(BF16{});
      return;
    case DType::kI32:
      f(int32_t{});
      return;
    case DType::kI64:
      f(int64_t{});
      return;
  }
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, BF16>) {
    return float_to_bf16(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Mask/condition truth: any nonzero value (NaN included, as bool(NaN) in PyTorch).
template <typename T>
inline bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, BF16>) {
    return (v.bits & 0x7fffu) != 0;
  } else {
    return v != T(0);
  }
}

// Stride of the innermost dim (0 for a scalar, which has one "row" of one element).
int64_t inner_stride(const Strides& strides) {
  return strides.empty() ? 0 : strides.back();
}
int64_t inner_size(const Shape& shape) {
  return shape.empty() ? 1 : shape.back();
}

// Offset of the first element of `row`, a flat row-major index over all dims but the last.
int64_t row_offset(int64_t row, const Shape& shape, const Strides& strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
    offset += (row % shape[d]) * strides[d];
    row /= shape[d];
  }
  return offset;
}

// Row-major table of offsets sum_d k_d * strides[d] for every multi-index k over dims
// [begin, end) of `shape`. Lets the gather/scatter kernels handle an index smaller than the
// indexed tensor in the non-axis dims with one table lookup per element.
std::vector<int64_t> offset_table(const Shape& shape, const Strides& strides, int64_t begin,
                                  int64_t end) {
  std::vector<int64_t> table{0};
  for (int64_t d = begin; d < end; ++d) {
    std::vector<int64_t> next;
    next.reserve(table.size() * shape[d]);
    for (int64_t base : table) {
      for (int64_t k = 0; k < shape[d]; ++k) next.push_back(base + k * strides[d]);
    }
    table = std::move(next);
  }
  return table;
}

int64_t product(const Shape& shape, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

// Throws naming `op`, the first offending index value and the dim size when any index is
// outside [0, n). The fast pass is a branch-free loop; the search only runs on failure.
template <typename I>
void check_indices(const I* idx, int64_t count, int64_t n, const char* op, int64_t axis,
                   const Shape& x_shape, const Shape& index_shape) {
  bool bad = false;
  for (int64_t i = 0; i < count; ++i) bad |= (idx[i] < 0) | (idx[i] >= n);
  if (!bad) return;
  for (int64_t i = 0; i < count; ++i) {
    if (idx[i] < 0 || idx[i] >= n) {
      fail("{}: index {} is out of range for dim {} of size {} (x {}, index {})", op,
           static_cast<int64_t>(idx[i]), axis, n, shape_str(x_shape), shape_str(index_shape));
    }
  }
}

// One unit of a scatter over [O, N, I] (outer, indexed dim, inner): outer slice `outer`, inner
// columns [col_begin, col_end) and target rows [row_begin, row_end) of the indexed dim.
struct ScatterTask {
  int64_t outer;
  int64_t col_begin, col_end;
  int64_t row_begin, row_end;
  bool owns_row(int64_t row) const { return row >= row_begin && row < row_end; }
};

// Runs body(task) for disjoint tasks covering a scatter over [O, N, I], in parallel. A task
// skips every contribution whose target row it does not own, so no two tasks ever write the
// same output element (no atomics), and each element sums its contributions in index order:
// the result is bit-identical for any thread count. Outer slices are split first, then inner
// columns, then rows (last, because each row block re-reads the whole index).
// work_per_outer: elements scattered per outer slice (J * I).
template <typename Body>
void parallel_scatter(int64_t outer, int64_t n, int64_t inner, int64_t work_per_outer,
                      Body&& body) {
  constexpr int64_t kMinColumns = 16;  // one AVX-512 f32 vector: narrower blocks waste lanes
  const int64_t nt = num_threads();
  int64_t col_blocks = 1;
  int64_t row_blocks = 1;
  if (outer < nt) {
    col_blocks = std::clamp<int64_t>(inner / kMinColumns, 1, (nt + outer - 1) / outer);
    const int64_t have = outer * col_blocks;
    if (have < nt)
      row_blocks = std::clamp<int64_t>((nt + have - 1) / have, 1, std::max<int64_t>(n, 1));
  }
  const int64_t per_outer = col_blocks * row_blocks;
  // [begin, end) of block b when `size` items are cut into `blocks` near-equal blocks.
  const auto edge = [](int64_t size, int64_t blocks, int64_t b) { return size * b / blocks; };
  parallel_for(outer * per_outer, work_per_outer / col_blocks + 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t cb = (t % per_outer) / row_blocks;
      const int64_t rb = t % row_blocks;
      body(ScatterTask{t / per_outer, edge(inner, col_blocks, cb), edge(inner, col_blocks, cb + 1),
                       edge(n, row_blocks, rb), edge(n, row_blocks, rb + 1)});
    }
  });
}

// True when `from` broadcasts (NumPy rules) to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

// NumPy broadcast of `shape` into `acc`; false when incompatible.
bool broadcast_into(Shape& acc, const Shape& shape) {
  if (shape.size() > acc.size()) acc.insert(acc.begin(), shape.size() - acc.size(), 1);
  const size_t lead = acc.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& a = acc[lead + i];
    if (shape[i] != 1 && a != 1 && shape[i] != a) return false;
    if (a == 1) a = shape[i];
  }
  return true;
}

}  // namespace

Tensor concat(const std::vector<Tensor>& parts_in, int64_t axis_in) {
  ROTA_CHECK(!parts_in.empty(), "concat: no tensors to concatenate");
  const Tensor& first = parts_in[0];
  ROTA_CHECK(first.dim() > 0, "concat: cannot concatenate 0-dim tensors");
  const int64_t axis = normalize_axis(axis_in, first.dim(), "concat");
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (const Tensor& p : parts_in) {
    ROTA_CHECK(p.dtype() == first.dtype(), "concat: dtypes differ ({} {} vs {} {})",
               dtype_name(first.dtype()), shape_str(first.shape()), dtype_name(p.dtype()),
               shape_str(p.shape()));
    ROTA_CHECK(p.dim() == first.dim(), "concat: {} and {} differ in rank (axis {})",
               shape_str(first.shape()), shape_str(p.shape()), axis);
    for (int64_t d = 0; d < first.dim(); ++d) {
      ROTA_CHECK(d == axis || p.size(d) == first.size(d),
                 "concat: {} and {} differ in dim {} (axis {})", shape_str(first.shape()),
                 shape_str(p.shape()), d, axis);
    }
    out_shape[axis] += p.size(axis);
  }
  Tensor out = Tensor::empty(out_shape, first.dtype());
  if (out.numel() == 0) return out;

  // out: [O, total * I]; part p: [O, n_p * I] occupies columns [seg_begin[p], seg_end[p]).
  const int64_t inner = product(out_shape, axis + 1, first.dim());
  const int64_t row_len = out_shape[axis] * inner;
  std::vector<Tensor> parts;
  std::vector<int64_t> seg_begin;
  std::vector<int64_t> seg_end;
  int64_t col = 0;
  for (const Tensor& p : parts_in) {
    parts.push_back(p.contiguous());
    seg_begin.push_back(col);
    col += p.size(axis) * inner;
    seg_end.push_back(col);
  }
  const size_t esize = dtype_size(out.dtype());
  char* po = static_cast<char*>(out.raw_data());
  // Split the flat output evenly (balanced even when O == 1, i.e. axis 0) and copy each
  // thread's range as a few memcpy segments, walking across part boundaries.
  parallel_for(out.numel(), 1, [&](int64_t begin, int64_t end) {
    int64_t pos = begin;
    while (pos < end) {
      const int64_t row = pos / row_len;
      const int64_t c = pos % row_len;
      const size_t p = std::upper_bound(seg_end.begin(), seg_end.end(), c) - seg_end.begin();
      const int64_t seg_len = seg_end[p] - seg_begin[p];
      const int64_t n = std::min(end - pos, seg_end[p] - c);
      const char* src = static_cast<const char*>(parts[p].raw_data()) +
                        (row * seg_len + (c - seg_begin[p])) * esize;
      std::memcpy(po + pos * esize, src, n * esize);
      pos += n;
    }
  });
  return out;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  ROTA_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(),
             "copy_into: {} {} into {} {}", dtype_name(src.dtype()), shape_str(src.shape()),
             dtype_name(dst.dtype()), shape_str(dst.shape()));
  if (dst.numel() == 0) return;
  // dst, src: [rows, inner] after flattening the leading dims; each row is one strided run.
  const Shape& shape = dst.shape();
  const int64_t inner = inner_size(shape);
  const int64_t rows = dst.numel() / inner;
  const int64_t ds = inner_stride(dst.strides());
  const int64_t ss = inner_stride(src.strides());
  dispatch_by_width(dst.dtype(), "copy_into", [&](auto width_tag) {
    using W = decltype(width_tag);
    W* pd = static_cast<W*>(dst.raw_data());
    const W* ps = static_cast<const W*>(src.raw_data());
    parallel_for(rows, inner, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        W* d = pd + row_offset(r, shape, dst.strides());
        const W* s = ps + row_offset(r, shape, src.strides());
        if (ds == 1 && ss == 1) {
          std::memcpy(d, s, inner * sizeof(W));
        } else {
          for (int64_t i = 0; i < inner; ++i) d[i * ds] = s[i * ss];
        }
      }
    });
  });
}

Tensor gather(const Tensor& x_in, int64_t axis_in, const Tensor& index_in) {
  ROTA_CHECK(index_in.dim() == x_in.dim(), "gather: index {} and x {} differ in rank",
             shape_str(index_in.shape()), shape_str(x_in.shape()));
  const int64_t axis = normalize_axis(axis_in, x_in.dim(), "gather");
  for (int64_t d = 0; d < x_in.dim(); ++d) {
    ROTA_CHECK(d == axis || index_in.size(d) <= x_in.size(d),
               "gather: index {} is larger than x {} in dim {} (axis {})",
               shape_str(index_in.shape()), shape_str(x_in.shape()), d, axis);
  }
  const Tensor x = x_in.contiguous();
  const Tensor index = index_in.contiguous();
  Tensor out = Tensor::empty(index.shape(), x.dtype());
  if (out.numel() == 0) return out;
  // index, out: [O, J, I]; x: [O', N, I'] with O <= O', I <= I' per dim.
  // out[o, j, i] = x[outer_off[o] + index[o, j, i] * stride_axis + inner_off[i]].
  const Shape& s = index.shape();
  const int64_t outer = product(s, 0, axis);
  const int64_t rows = s[axis];
  const int64_t inner = product(s, axis + 1, index.dim());
  const int64_t stride_axis = x.strides()[axis];
  const std::vector<int64_t> outer_off = offset_table(s, x.strides(), 0, axis);
  const std::vector<int64_t> inner_off = offset_table(s, x.strides(), axis + 1, index.dim());
  dispatch_index(index.dtype(), "gather", [&](auto index_tag) {
    using Ix = decltype(index_tag);
    const Ix* pi = index.data<Ix>();
    check_indices(pi, index.numel(), x.size(axis), "gather", axis, x.shape(), index.shape());
    dispatch_by_width(x.dtype(), "gather", [&](auto width_tag) {
      using W = decltype(width_tag);
      const W* px = static_cast<const W*>(x.raw_data());
      W* po = static_cast<W*>(out.raw_data());
      parallel_for(outer * rows, inner, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const W* xo = px + outer_off[r / rows];
          const Ix* ir = pi + r * inner;
          W* orow = po + r * inner;
          for (int64_t i = 0; i < inner; ++i) orow[i] = xo[ir[i] * stride_axis + inner_off[i]];
        }
      });
    });
  });
  return out;
}

Tensor scatter_add(const Shape& shape, int64_t axis_in, const Tensor& index_in,
                   const Tensor& src_in) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  ROTA_CHECK(index_in.shape() == src_in.shape() && index_in.dim() == nd,
             "scatter_add: index {} and src {} must match each other and the rank of {}",
             shape_str(index_in.shape()), shape_str(src_in.shape()), shape_str(shape));
  const int64_t axis = normalize_axis(axis_in, nd, "scatter_add");
  for (int64_t d = 0; d < nd; ++d) {
    ROTA_CHECK(d == axis || index_in.size(d) <= shape[d],
               "scatter_add: index {} is larger than output {} in dim {} (axis {})",
               shape_str(index_in.shape()), shape_str(shape), d, axis);
  }
  const Tensor index = index_in.contiguous();
  const Tensor src = src_in.contiguous();
  Tensor out = zeros(shape, src.dtype());
  if (src.numel() == 0) return out;
  // index, src: [O, J, I]; out: [O', N, I'].
  // out[outer_off[o] + index[o, j, i] * stride_axis + inner_off[i]] += src[o, j, i].
  const Shape& s = index.shape();
  const Strides& os = out.strides();
  const int64_t outer = product(s, 0, axis);
  const int64_t rows = s[axis];
  const int64_t inner = product(s, axis + 1, nd);
  const int64_t n = shape[axis];
  const int64_t stride_axis = os[axis];
  const std::vector<int64_t> outer_off = offset_table(s, os, 0, axis);
  const std::vector<int64_t> inner_off = offset_table(s, os, axis + 1, nd);
  dispatch_index(index.dtype(), "scatter_add", [&](auto index_tag) {
    using Ix = decltype(index_tag);
    const Ix* pi = index.data<Ix>();
    check_indices(pi, index.numel(), n, "scatter_add", axis, shape, index.shape());
    dispatch_floating(src.dtype(), "scatter_add", [&](auto tag) {
      using T = decltype(tag);
      const T* ps = src.data<T>();
      T* po = out.data<T>();
      parallel_scatter(outer, n, inner, rows * inner, [&](const ScatterTask& task) {
        T* out_o = po + outer_off[task.outer];
        for (int64_t j = 0; j < rows; ++j) {
          const int64_t base = (task.outer * rows + j) * inner;
          for (int64_t i = task.col_begin; i < task.col_end; ++i) {
            const int64_t v = pi[base + i];
            if (task.owns_row(v)) out_o[v * stride_axis + inner_off[i]] += ps[base + i];
          }
        }
      });
    });
  });
  return out;
}

Tensor index_select(const Tensor& x_in, int64_t axis_in, const Tensor& index_in) {
  ROTA_CHECK(index_in.dim() == 1, "index_select: index must be 1-D, got {} (x {})",
             shape_str(index_in.shape()), shape_str(x_in.shape()));
  const int64_t axis = normalize_axis(axis_in, x_in.dim(), "index_select");
  const Tensor x = x_in.contiguous();
  const Tensor index = index_in.contiguous();
  Shape out_shape = x.shape();
  out_shape[axis] = index.numel();
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (out.numel() == 0) {
    // Still validate: an empty x with a non-empty index is an error, not an empty result.
    dispatch_index(index.dtype(), "index_select", [&](auto index_tag) {
      using Ix = decltype(index_tag);
      check_indices(index.data<Ix>(), index.numel(), x.size(axis), "index_select", axis, x.shape(),
                    index.shape());
    });
    return out;
  }
  // x: [O, N, I]; index: [J]; out: [O, J, I] with out[o, j, :] = x[o, index[j], :].
  const int64_t outer = product(out_shape, 0, axis);
  const int64_t n = x.size(axis);
  const int64_t rows = index.numel();
  const int64_t inner = product(out_shape, axis + 1, x.dim());
  dispatch_index(index.dtype(), "index_select", [&](auto index_tag) {
    using Ix = decltype(index_tag);
    const Ix* pi = index.data<Ix>();
    check_indices(pi, rows, n, "index_select", axis, x.shape(), index.shape());
    dispatch_by_width(x.dtype(), "index_select", [&](auto width_tag) {
      using W = decltype(width_tag);
      const W* px = static_cast<const W*>(x.raw_data());
      W* po = static_cast<W*>(out.raw_data());
      parallel_for(outer * rows, inner, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r / rows;
          const W* xrow = px + (o * n + pi[r % rows]) * inner;
          W* orow = po + r * inner;
          for (int64_t i = 0; i < inner; ++i) orow[i] = xrow[i];
        }
      });
    });
  });
  return out;
}

Tensor index_add(const Shape& shape, int64_t axis_in, const Tensor& index_in,
                 const Tensor& src_in) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  ROTA_CHECK(index_in.dim() == 1, "index_add: index must be 1-D, got {} (src {})",
             shape_str(index_in.shape()), shape_str(src_in.shape()));
  const int64_t axis = normalize_axis(axis_in, nd, "index_add");
  bool compatible = src_in.dim() == nd && src_in.size(axis) == index_in.numel();
  for (int64_t d = 0; compatible && d < nd; ++d)
    compatible = d == axis || src_in.size(d) == shape[d];
  ROTA_CHECK(compatible, "index_add: src {} does not fit output {} with index {} (axis {})",
             shape_str(src_in.shape()), shape_str(shape), shape_str(index_in.shape()), axis);
  const Tensor index = index_in.contiguous();
  const Tensor src = src_in.contiguous();
  Tensor out = zeros(shape, src.dtype());
  // src: [O, J, I]; index: [J]; out: [O, N, I] with out[o, index[j], :] += src[o, j, :].
  const int64_t outer = product(shape, 0, axis);
  const int64_t n = shape[axis];
  const int64_t rows = index.numel();
  const int64_t inner = product(shape, axis + 1, nd);
  dispatch_index(index.dtype(), "index_add", [&](auto index_tag) {
    using Ix = decltype(index_tag);
    const Ix* pi = index.data<Ix>();
    check_indices(pi, rows, n, "index_add", axis, shape, index.shape());
    if (src.numel() == 0) return;
    dispatch_floating(src.dtype(), "index_add", [&](auto tag) {
      using T = decltype(tag);
      const T* ps = src.data<T>();
      T* po = out.data<T>();
      parallel_scatter(outer, n, inner, rows * inner, [&](const ScatterTask& task) {
        for (int64_t j = 0; j < rows; ++j) {
          const int64_t v = pi[j];
          if (!task.owns_row(v)) continue;
          T* orow = po + (task.outer * n + v) * inner;
          const T* srow = ps + (task.outer * rows + j) * inner;
#pragma omp simd
          for (int64_t i = task.col_begin; i < task.col_end; ++i) orow[i] += srow[i];
        }
      });
    });
  });
  return out;
}

Tensor masked_fill(const Tensor& x_in, const Tensor& mask, double value) {
  ROTA_CHECK(broadcasts_to(mask.shape(), x_in.shape()),
             "masked_fill: mask {} does not broadcast to x {}", shape_str(mask.shape()),
             shape_str(x_in.shape()));
  ROTA_CHECK(is_floating(x_in.dtype()) || std::isfinite(value),
             "masked_fill: value {} does not fit integer dtype {} (x {})", value,
             dtype_name(x_in.dtype()), shape_str(x_in.shape()));
  const Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  // x, out: [rows, inner]; mask read through zero strides where it broadcasts (no copy).
  // out = mask != 0 ? value : x.
  const Tensor m = mask.expand(x.shape());
  const Shape& shape = x.shape();
  const int64_t inner = inner_size(shape);
  const int64_t rows = x.numel() / inner;
  const int64_t ms = inner_stride(m.strides());
  dispatch_any(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T fill = from_double<T>(value);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    dispatch_any(m.dtype(), [&](auto mask_tag) {
      using M = decltype(mask_tag);
      const M* pm = m.data<M>();
      parallel_for(rows, inner, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const M* mrow = pm + row_offset(r, shape, m.strides());
          const T* xrow = px + r * inner;
          T* orow = po + r * inner;
          if (ms == 1) {
            // Mask varies along the row (e.g. a causal or padding mask): a unit-stride select
            // the compiler can vectorise.
            for (int64_t i = 0; i < inner; ++i) orow[i] = is_nonzero(mrow[i]) ? fill : xrow[i];
          } else if (ms == 0) {
            // Mask is constant along the row: one test, then a fill or a plain copy.
            const bool masked = is_nonzero(mrow[0]);
            for (int64_t i = 0; i < inner; ++i) orow[i] = masked ? fill : xrow[i];
          } else {
            for (int64_t i = 0; i < inner; ++i) {
              orow[i] = is_nonzero(mrow[i * ms]) ? fill : xrow[i];
            }
          }
        }
      });
    });
  });
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  ROTA_CHECK(a.dtype() == b.dtype(), "where: a {} {} and b {} {} differ in dtype",
             dtype_name(a.dtype()), shape_str(a.shape()), dtype_name(b.dtype()),
             shape_str(b.shape()));
  Shape shape = cond.shape();
  ROTA_CHECK(broadcast_into(shape, a.shape()) && broadcast_into(shape, b.shape()),
             "where: cond {}, a {} and b {} cannot be broadcast together", shape_str(cond.shape()),
             shape_str(a.shape()), shape_str(b.shape()));
  Tensor out = Tensor::empty(shape, a.dtype());
  if (out.numel() == 0) return out;
  // cond, a, b read in place through broadcast strides; out = cond != 0 ? a : b.
  const Tensor ce = cond.expand(shape);
  const Tensor ae = a.expand(shape);
  const Tensor be = b.expand(shape);
  const int64_t inner = inner_size(shape);
  const int64_t rows = out.numel() / inner;
  const int64_t cs = inner_stride(ce.strides());
  const int64_t as = inner_stride(ae.strides());
  const int64_t bs = inner_stride(be.strides());
  dispatch_by_width(a.dtype(), "where", [&](auto width_tag) {
    using W = decltype(width_tag);
    const W* pa = static_cast<const W*>(ae.raw_data());
    const W* pb = static_cast<const W*>(be.raw_data());
    W* po = static_cast<W*>(out.raw_data());
    dispatch_any(ce.dtype(), [&](auto cond_tag) {
      using C = decltype(cond_tag);
      const C* pc = ce.data<C>();
      parallel_for(rows, inner, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const C* crow = pc + row_offset(r, shape, ce.strides());
          const W* arow = pa + row_offset(r, shape, ae.strides());
          const W* brow = pb + row_offset(r, shape, be.strides());
          W* orow = po + r * inner;
          for (int64_t i = 0; i < inner; ++i) {
            orow[i] = is_nonzero(crow[i * cs]) ? arow[i * as] : brow[i * bs];
          }
        }
      });
    });
  });
  return out;
}

namespace {

// x, out: [B, R, C] (leading dims flattened). Row r keeps columns [keep_begin, keep_end) and
// zeros the rest: tril keeps c <= r + k, triu keeps c >= r + k.
Tensor triangle(const Tensor& x_in, int64_t k, bool lower, const char* op) {
  ROTA_CHECK(x_in.dim() >= 2, "{}: x {} needs at least 2 dims", op, shape_str(x_in.shape()));
  const Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  const int64_t r_size = x.size(-2);
  const int64_t c_size = x.size(-1);
  const int64_t rows = x.numel() / c_size;
  dispatch_by_width(x.dtype(), op, [&](auto width_tag) {
    using W = decltype(width_tag);
    const W* px = static_cast<const W*>(x.raw_data());
    W* po = static_cast<W*>(out.raw_data());
    parallel_for(rows, c_size, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t r = row % r_size;
        const int64_t edge = std::clamp<int64_t>(lower ? r + k + 1 : r + k, 0, c_size);
        const int64_t keep_begin = lower ? 0 : edge;
        const int64_t keep_end = lower ? edge : c_size;
        const W* xrow = px + row * c_size;
        W* orow = po + row * c_size;
        // All-zero bits are +0 in every dtype, so W{0} zeros floats, bf16 and integers alike.
        for (int64_t c = 0; c < keep_begin; ++c) orow[c] = W{0};
        for (int64_t c = keep_begin; c < keep_end; ++c) orow[c] = xrow[c];
        for (int64_t c = keep_end; c < c_size; ++c) orow[c] = W{0};
      }
    });
  });
  return out;
}

}  // namespace

Tensor tril(const Tensor& x, int64_t k) {
  return triangle(x, k, /*lower=*/true, "tril");
}
Tensor triu(const Tensor& x, int64_t k) {
  return triangle(x, k, /*lower=*/false, "triu");
}

Tensor tril_mask(int64_t rows, int64_t cols, int64_t k, DType dtype) {
  ROTA_CHECK(rows >= 0 && cols >= 0, "tril_mask: negative size [{},{}]", rows, cols);
  return tril(ones({rows, cols}, dtype), k);
}

Tensor triu_mask(int64_t rows, int64_t cols, int64_t k, DType dtype) {
  ROTA_CHECK(rows >= 0 && cols >= 0, "triu_mask: negative size [{},{}]", rows, cols);
  return triu(ones({rows, cols}, dtype), k);
}

}  // namespace rota::backend
