// Layer norm and RMS norm: one row kernel, centred (layer norm) or not (RMS), parallel over rows.
#include "framework/backend/primitives/norm.h"

#include <algorithm>
#include <cmath>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::backend {

namespace {

// The weight/bias gradients are sums over rows. Rows are cut into at most kMaxRowBlocks fixed
// blocks, each block sums its rows into its own [D] partial, and the partials are added in
// block order. The cut depends only on R, so the result is bit-identical for any thread count
// (a per-thread partial would make it depend on how many threads ran).
constexpr int64_t kMaxRowBlocks = 64;

struct RowBlocks {
  int64_t rows_per_block = 1;
  int64_t count = 0;
};

RowBlocks row_blocks(int64_t rows) {
  RowBlocks blocks;
  blocks.rows_per_block = std::max<int64_t>(1, (rows + kMaxRowBlocks - 1) / kMaxRowBlocks);
  blocks.count = (rows + blocks.rows_per_block - 1) / blocks.rows_per_block;
  return blocks;
}

// Checks x and the optional [D] parameters; returns D.
int64_t check_norm_inputs(const char* op, const Tensor& x, const Tensor& weight,
                          const Tensor& bias) {
  ROTA_CHECK(x.defined(), "{}: input is undefined", op);
  ROTA_CHECK(x.dim() >= 1, "{}: input {} needs at least one dim", op, shape_str(x.shape()));
  const int64_t d = x.size(-1);
  for (const auto& [name, p] : {std::pair{"weight", &weight}, std::pair{"bias", &bias}}) {
    if (!p->defined()) continue;
    ROTA_CHECK(p->shape() == Shape{d}, "{}: {} {} does not match input {} (expected [{}])", op,
               name, shape_str(p->shape()), shape_str(x.shape()), d);
    ROTA_CHECK(p->dtype() == x.dtype(), "{}: {} dtype {} differs from input dtype {}", op, name,
               dtype_name(p->dtype()), dtype_name(x.dtype()));
  }
  return d;
}

// Number of rows: the product of all dims but the last (valid even when D == 0).
int64_t row_count(const Tensor& x) {
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.dim(); ++i) rows *= x.size(i);
  return rows;
}

// A contiguous [D] parameter, or `fill` everywhere when the parameter is absent. Materialising
// ones/zeros keeps a single inner loop; a [D] row stays in L1, so it costs no memory bandwidth.
Tensor param_or_fill(const Tensor& p, int64_t d, double fill, DType dtype) {
  return p.defined() ? p.contiguous() : full({d}, fill, dtype);
}

// Row reductions use kLanes<T> independent partial sums (two SSE registers' worth). A plain
// `s += a[i]` loop stays scalar: without -ffast-math GCC may not reorder FP additions, and
// `omp simd reduction` proved unreliable here (the copy of the loop inlined into the OpenMP
// outlined function stayed scalar and took most of the backward's time). Independent lanes
// need no reordering, so they vectorise in every copy, and the fixed order of the final lane
// sum keeps results deterministic.
template <typename T>
constexpr int64_t kLanes = 32 / static_cast<int64_t>(sizeof(T));

// Σ_{i<n} term(i).
template <typename T, typename Term>
inline T lane_sum(int64_t n, Term&& term) {
  T lanes[kLanes<T>] = {};
  int64_t i = 0;
  for (; i + kLanes<T> <= n; i += kLanes<T>) {
    for (int64_t j = 0; j < kLanes<T>; ++j) lanes[j] += term(i + j);
  }
  for (int64_t j = 0; i + j < n; ++j) lanes[j] += term(i + j);
  T total = 0;
  for (int64_t j = 0; j < kLanes<T>; ++j) total += lanes[j];
  return total;
}

// Forward over rows. x: [R, D], w, b: [D] -> y: [R, D], mean, rstd: [R].
//   layer norm (kCentered): mean = Σx / D, var = Σ(x - mean)² / D   (two passes: stable)
//   RMS norm:               mean = 0,      var = Σx² / D
//   rstd = 1 / sqrt(var + eps),  y = (x - mean) * rstd * w + b   (b unused for RMS)
// The row is read three times, but a row of a few KB stays in L1: memory sees one read of x
// and one write of y.
template <typename T, bool kCentered>
void norm_forward_rows(const T* x, const T* w, const T* b, T* y, T* mean_out, T* rstd_out,
                       int64_t rows, int64_t d, T eps) {
  parallel_for(rows, 4 * d, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * d;
      T* yr = y + r * d;
      T mean = 0;
      if constexpr (kCentered) {
        mean = lane_sum<T>(d, [xr](int64_t i) { return xr[i]; }) / static_cast<T>(d);
      }
      const T squares = lane_sum<T>(d, [xr, mean](int64_t i) {
        const T c = xr[i] - mean;
        return c * c;
      });
      const T rstd = T(1) / std::sqrt(squares / static_cast<T>(d) + eps);
      if constexpr (kCentered) {
#pragma omp simd
        for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
        mean_out[r] = mean;
      } else {
#pragma omp simd
        for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * rstd * w[i];
      }
      rstd_out[r] = rstd;
    }
  });
}

// Backward over rows. g, x: [R, D]; mean (layer norm only), rstd: [R]; w: [D].
// Outputs: dx: [R, D] (null when not requested); dw_part and, for layer norm, db_part:
// [blocks, D], always written (the caller reduces the ones it needs: an unrequested partial
// costs one L1 add per element, far less than a separate pass over the row would).
// With x̂ = (x - mean) * rstd and gw = g * w:
//   layer norm: dx = rstd * (gw - Σgw / D - x̂ * Σ(gw x̂) / D)
//   RMS norm:   dx = rstd * (gw - x̂ * Σ(gw x̂) / D)
//   dw_part[k] = Σ_{rows r in block k} g x̂,   db_part[k] = Σ_{rows r in block k} g
// Per row: one pass for each row sum, then one fused pass writing dx and accumulating the
// partials; the row stays in L1 across passes.
template <typename T, bool kCentered>
void norm_backward_rows(const T* g, const T* x, const T* mean, const T* rstd, const T* w, T* dx,
                        T* dw_part, T* db_part, int64_t rows, int64_t d, RowBlocks blocks) {
  const T inv_d = T(1) / static_cast<T>(d);
  parallel_for(blocks.count, blocks.rows_per_block * d * 8, [&](int64_t k_begin, int64_t k_end) {
    for (int64_t k = k_begin; k < k_end; ++k) {
      T* dw = dw_part + k * d;
      T* db = kCentered ? db_part + k * d : nullptr;
      std::fill(dw, dw + d, T(0));
      if constexpr (kCentered) std::fill(db, db + d, T(0));
      const int64_t r_end = std::min(rows, (k + 1) * blocks.rows_per_block);
      for (int64_t r = k * blocks.rows_per_block; r < r_end; ++r) {
        const T* gr = g + r * d;
        const T* xr = x + r * d;
        const T mu = kCentered ? mean[r] : T(0);
        const T rs = rstd[r];
        if (!dx) {
#pragma omp simd
          for (int64_t i = 0; i < d; ++i) {
            dw[i] += gr[i] * ((xr[i] - mu) * rs);
            if constexpr (kCentered) db[i] += gr[i];
          }
          continue;
        }
        T mean_gw = 0;
        if constexpr (kCentered) {
          mean_gw = lane_sum<T>(d, [gr, w](int64_t i) { return gr[i] * w[i]; }) * inv_d;
        }
        const T mean_gw_xhat = inv_d * lane_sum<T>(d, [gr, w, xr, mu, rs](int64_t i) {
                                 return gr[i] * w[i] * ((xr[i] - mu) * rs);
                               });
        T* dxr = dx + r * d;
#pragma omp simd
        for (int64_t i = 0; i < d; ++i) {
          const T xhat = (xr[i] - mu) * rs;
          dxr[i] = rs * (gr[i] * w[i] - mean_gw - xhat * mean_gw_xhat);
          dw[i] += gr[i] * xhat;
          if constexpr (kCentered) db[i] += gr[i];
        }
      }
    }
  });
}

// out[i] = Σ_k partials[k, i], k in increasing order (deterministic). partials: [blocks, D].
template <typename T>
Tensor sum_partials(const Tensor& partials, int64_t blocks, int64_t d) {
  Tensor out = zeros({d}, partials.dtype());
  const T* p = partials.data<T>();
  T* o = out.data<T>();
  parallel_for(d, blocks, [&](int64_t begin, int64_t end) {
    for (int64_t k = 0; k < blocks; ++k) {
      const T* row = p + k * d;
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) o[i] += row[i];
    }
  });
  return out;
}

void check_backward_inputs(const char* op, const Tensor& grad_y, const Tensor& x,
                           const Tensor& rstd, int64_t rows) {
  ROTA_CHECK(grad_y.shape() == x.shape(), "{}: grad {} does not match input {}", op,
             shape_str(grad_y.shape()), shape_str(x.shape()));
  ROTA_CHECK(grad_y.dtype() == x.dtype(), "{}: grad dtype {} differs from input dtype {}", op,
             dtype_name(grad_y.dtype()), dtype_name(x.dtype()));
  ROTA_CHECK(rstd.shape() == Shape{rows} && rstd.dtype() == x.dtype(),
             "{}: saved rstd {} {} does not match input {} ({} rows)", op, dtype_name(rstd.dtype()),
             shape_str(rstd.shape()), shape_str(x.shape()), rows);
}

}  // namespace

LayerNormForward layer_norm_forward(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                                    double eps) {
  const int64_t d = check_norm_inputs("layer_norm", x_in, weight, bias);
  const int64_t rows = row_count(x_in);
  const Tensor x = x_in.contiguous();
  LayerNormForward out{Tensor::empty(x.shape(), x.dtype()), Tensor::empty({rows}, x.dtype()),
                       Tensor::empty({rows}, x.dtype())};
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const Tensor w = param_or_fill(weight, d, 1.0, x.dtype());
    const Tensor b = param_or_fill(bias, d, 0.0, x.dtype());
    norm_forward_rows<T, true>(x.data<T>(), w.data<T>(), b.data<T>(), out.y.data<T>(),
                               out.mean.data<T>(), out.rstd.data<T>(), rows, d,
                               static_cast<T>(eps));
  });
  return out;
}

LayerNormGrads layer_norm_backward(const Tensor& grad_y, const Tensor& x_in, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight,
                                   const NormGradRequest& request) {
  const int64_t d = check_norm_inputs("layer_norm_backward", x_in, weight, Tensor());
  const int64_t rows = row_count(x_in);
  check_backward_inputs("layer_norm_backward", grad_y, x_in, rstd, rows);
  ROTA_CHECK(mean.shape() == rstd.shape() && mean.dtype() == rstd.dtype(),
             "layer_norm_backward: saved mean {} and rstd {} differ", shape_str(mean.shape()),
             shape_str(rstd.shape()));
  const Tensor x = x_in.contiguous();
  const Tensor g = grad_y.contiguous();
  const RowBlocks blocks = row_blocks(rows);
  LayerNormGrads grads;
  if (request.x) grads.dx = Tensor::empty(x.shape(), x.dtype());
  const Tensor dw_part = Tensor::empty({blocks.count, d}, x.dtype());
  const Tensor db_part = Tensor::empty({blocks.count, d}, x.dtype());
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor w = param_or_fill(weight, d, 1.0, x.dtype());
    norm_backward_rows<T, true>(g.data<T>(), x.data<T>(), mean.contiguous().data<T>(),
                                rstd.contiguous().data<T>(), w.data<T>(),
                                request.x ? grads.dx.data<T>() : nullptr, dw_part.data<T>(),
                                db_part.data<T>(), rows, d, blocks);
    if (request.weight) grads.dweight = sum_partials<T>(dw_part, blocks.count, d);
    if (request.bias) grads.dbias = sum_partials<T>(db_part, blocks.count, d);
  });
  return grads;
}

RmsNormForward rms_norm_forward(const Tensor& x_in, const Tensor& weight, double eps) {
  const int64_t d = check_norm_inputs("rms_norm", x_in, weight, Tensor());
  const int64_t rows = row_count(x_in);
  const Tensor x = x_in.contiguous();
  RmsNormForward out{Tensor::empty(x.shape(), x.dtype()), Tensor::empty({rows}, x.dtype())};
  dispatch_floating(x.dtype(), "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    const Tensor w = param_or_fill(weight, d, 1.0, x.dtype());
    norm_forward_rows<T, false>(x.data<T>(), w.data<T>(), nullptr, out.y.data<T>(), nullptr,
                                out.rstd.data<T>(), rows, d, static_cast<T>(eps));
  });
  return out;
}

RmsNormGrads rms_norm_backward(const Tensor& grad_y, const Tensor& x_in, const Tensor& rstd,
                               const Tensor& weight, const NormGradRequest& request) {
  const int64_t d = check_norm_inputs("rms_norm_backward", x_in, weight, Tensor());
  const int64_t rows = row_count(x_in);
  check_backward_inputs("rms_norm_backward", grad_y, x_in, rstd, rows);
  const Tensor x = x_in.contiguous();
  const Tensor g = grad_y.contiguous();
  const RowBlocks blocks = row_blocks(rows);
  RmsNormGrads grads;
  if (request.x) grads.dx = Tensor::empty(x.shape(), x.dtype());
  const Tensor dw_part = Tensor::empty({blocks.count, d}, x.dtype());
  dispatch_floating(x.dtype(), "rms_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor w = param_or_fill(weight, d, 1.0, x.dtype());
    norm_backward_rows<T, false>(g.data<T>(), x.data<T>(), nullptr, rstd.contiguous().data<T>(),
                                 w.data<T>(), request.x ? grads.dx.data<T>() : nullptr,
                                 dw_part.data<T>(), nullptr, rows, d, blocks);
    if (request.weight) grads.dweight = sum_partials<T>(dw_part, blocks.count, d);
  });
  return grads;
}

}  // namespace rota::backend
