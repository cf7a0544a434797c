// Fused LRPE kernel: one pass per row applies P then Λ(s); the backward mirrors it.
#include "framework/backend/lrpe.h"

#include <algorithm>
#include <cmath>

#include "framework/backend/dispatch.h"
#include "framework/backend/parallel.h"

namespace rota::backend {

int64_t lrpe_output_dim(LrpeCore core, int64_t d) {
  return core == LrpeCore::kUnitary ? 2 * d : d;
}

std::vector<int64_t> permutation_power_table(const Tensor& permutation, int64_t offset, int64_t n) {
  const int64_t d = permutation.numel();
  const std::vector<double> pv = permutation.to_double_vector();
  std::vector<int64_t> pi(d);
  std::vector<bool> seen(d, false);
  for (int64_t j = 0; j < d; ++j) {
    pi[j] = static_cast<int64_t>(pv[j]);
    ROTA_CHECK(pi[j] >= 0 && pi[j] < d && !seen[pi[j]],
               "lrpe: permutation {} is not a permutation of 0..{}", permutation.to_string(16),
               d - 1);
    seen[pi[j]] = true;
  }
  // Cycle decomposition: j sits at position pos[j] of cycle cyc[j]; π^s(j) moves s steps on.
  std::vector<std::vector<int64_t>> cycles;
  std::vector<int64_t> cycle_of(d, -1);
  std::vector<int64_t> pos(d, 0);
  for (int64_t j = 0; j < d; ++j) {
    if (cycle_of[j] >= 0) continue;
    std::vector<int64_t> cycle;
    for (int64_t x = j; cycle_of[x] < 0; x = pi[x]) {
      cycle_of[x] = static_cast<int64_t>(cycles.size());
      pos[x] = static_cast<int64_t>(cycle.size());
      cycle.push_back(x);
    }
    cycles.push_back(std::move(cycle));
  }
  std::vector<int64_t> table(n * d);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t s = offset + r;
    for (int64_t j = 0; j < d; ++j) {
      const auto& cycle = cycles[cycle_of[j]];
      const int64_t len = static_cast<int64_t>(cycle.size());
      table[r * d + j] = cycle[(pos[j] + s % len) % len];
    }
  }
  return table;
}

namespace {

struct LrpeDims {
  int64_t rows;  // G·N
  int64_t n;     // N
  int64_t d;     // D
  int64_t f;     // F
  int64_t m;     // number of angles
};

LrpeDims check_inputs(const char* op, const LrpeKernelConfig& c, const Tensor& x,
                      const Tensor& theta, const Tensor& w, const Tensor& permutation) {
  ROTA_CHECK(x.dim() >= 2, "{}: x {} must be [..., N, D]", op, shape_str(x.shape()));
  LrpeDims s;
  s.n = x.size(-2);
  s.d = x.size(-1);
  s.rows = s.d ? x.numel() / s.d : 0;
  s.f = lrpe_output_dim(c.core, s.d);
  s.m = c.core == LrpeCore::kUnitary ? s.d : (c.core == LrpeCore::kOrthogonal ? s.d / 2 : 0);
  ROTA_CHECK(c.offset >= 0, "{}: negative position offset {}", op, c.offset);
  if (c.core == LrpeCore::kPermutation) {
    ROTA_CHECK(permutation.defined() && permutation.numel() == s.d,
               "{}: Type 3 needs a permutation of {} entries, got {}", op, s.d,
               permutation.defined() ? shape_str(permutation.shape()) : "none");
  } else {
    ROTA_CHECK(
        theta.defined() && theta.dim() == 1 && theta.size(0) == s.m && theta.dtype() == x.dtype(),
        "{}: theta must be [{}] {} for x {}, got {}", op, s.m, dtype_name(x.dtype()),
        shape_str(x.shape()), theta.defined() ? shape_str(theta.shape()) : "none");
  }
  if (c.mix == LrpeMix::kHouseholder) {
    ROTA_CHECK(w.defined() && w.dim() == 1 && w.size(0) == s.d && w.dtype() == x.dtype(),
               "{}: Householder vector must be [{}] {}, got {}", op, s.d, dtype_name(x.dtype()),
               w.defined() ? shape_str(w.shape()) : "none");
  }
  return s;
}

// Per-position tables shared by every row at that position.
template <typename T>
struct PositionTables {
  std::vector<T> cos;               // [N, m]
  std::vector<T> sin;               // [N, m]
  std::vector<int64_t> perm_power;  // [N, D] for Type 3
  std::vector<int64_t> odd_even;    // [D]: u[j] = x[odd_even[j]]
};

template <typename T>
PositionTables<T> build_tables(const LrpeKernelConfig& c, const LrpeDims& s, const Tensor& theta,
                               const Tensor& permutation) {
  PositionTables<T> t;
  if (c.core == LrpeCore::kPermutation) {
    t.perm_power = permutation_power_table(permutation, c.offset, s.n);
  } else {
    const std::vector<double> th = theta.to_double_vector();
    t.cos.resize(s.n * s.m);
    t.sin.resize(s.n * s.m);
    for (int64_t r = 0; r < s.n; ++r) {
      const double pos = static_cast<double>(c.offset + r);
      for (int64_t k = 0; k < s.m; ++k) {
        // Angles in double: s·θ reaches 10^4 rad for long sequences, beyond float's accuracy.
        t.cos[r * s.m + k] = static_cast<T>(std::cos(pos * th[k]));
        t.sin[r * s.m + k] = static_cast<T>(std::sin(pos * th[k]));
      }
    }
  }
  if (c.mix == LrpeMix::kOddEven) {
    const int64_t h = (s.d + 1) / 2;
    t.odd_even.resize(s.d);
    for (int64_t j = 0; j < s.d; ++j) t.odd_even[j] = j % 2 == 0 ? j / 2 : h + (j - 1) / 2;
  }
  return t;
}

// The pair (i0, i1) rotated by angle k for Type 2.
inline void pair_indices(LrpePairing pairing, int64_t k, int64_t m, int64_t* i0, int64_t* i1) {
  if (pairing == LrpePairing::kAdjacent) {
    *i0 = 2 * k;
    *i1 = 2 * k + 1;
  } else {
    *i0 = k;
    *i1 = k + m;
  }
}

// u = P x for one row. x, u: [D].
template <typename T>
inline void apply_mix(const LrpeKernelConfig& c, const PositionTables<T>& t, const T* x, const T* w,
                      T* u, int64_t d) {
  switch (c.mix) {
    case LrpeMix::kIdentity:
      std::copy(x, x + d, u);
      break;
    case LrpeMix::kHouseholder: {
      T xw = 0;
      for (int64_t j = 0; j < d; ++j) xw += x[j] * w[j];
      for (int64_t j = 0; j < d; ++j) u[j] = x[j] - T(2) * xw * w[j];
      break;
    }
    case LrpeMix::kOddEven:
      for (int64_t j = 0; j < d; ++j) u[j] = x[t.odd_even[j]];
      break;
  }
}

// y = Λ(s) u for the row at position index r. u: [D], y: [F].
template <typename T>
inline void apply_core(const LrpeKernelConfig& c, const PositionTables<T>& t, const LrpeDims& s,
                       int64_t r, const T* u, T* y) {
  switch (c.core) {
    case LrpeCore::kUnitary: {
      const T* cs = t.cos.data() + r * s.m;
      const T* sn = t.sin.data() + r * s.m;
      for (int64_t j = 0; j < s.d; ++j) {
        y[j] = u[j] * cs[j];
        y[s.d + j] = u[j] * sn[j];
      }
      break;
    }
    case LrpeCore::kOrthogonal: {
      const T* cs = t.cos.data() + r * s.m;
      const T* sn = t.sin.data() + r * s.m;
      for (int64_t k = 0; k < s.m; ++k) {
        int64_t i0, i1;
        pair_indices(c.pairing, k, s.m, &i0, &i1);
        const T a = u[i0];
        const T b = u[i1];
        y[i0] = a * cs[k] - b * sn[k];
        y[i1] = a * sn[k] + b * cs[k];
      }
      if (s.d % 2 == 1) y[s.d - 1] = u[s.d - 1];
      break;
    }
    case LrpeCore::kPermutation: {
      const int64_t* pp = t.perm_power.data() + r * s.d;
      for (int64_t j = 0; j < s.d; ++j) y[j] = u[pp[j]];
      break;
    }
  }
}

// Rows are split into a fixed number of blocks (not threads), so the θ / w partial sums, and
// therefore the result, do not depend on the thread count.
int64_t num_blocks(int64_t rows) {
  return std::max<int64_t>(1, std::min<int64_t>(rows, 64));
}

}  // namespace

Tensor lrpe_forward(const LrpeKernelConfig& c, const Tensor& x_in, const Tensor& theta,
                    const Tensor& w_in, const Tensor& permutation) {
  const char* op = "lrpe";
  const LrpeDims s = check_inputs(op, c, x_in, theta, w_in, permutation);
  const Tensor x = x_in.contiguous();
  Shape out_shape = x.shape();
  out_shape.back() = s.f;
  Tensor y = Tensor::empty(out_shape, x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const PositionTables<T> t = build_tables<T>(c, s, theta, permutation);
    const Tensor w = c.mix == LrpeMix::kHouseholder ? w_in.contiguous() : Tensor();
    const T* pw = w.defined() ? w.data<T>() : nullptr;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(s.rows, 4 * s.f, [&](int64_t r0, int64_t r1) {
      std::vector<T> u(s.d);
      for (int64_t row = r0; row < r1; ++row) {
        apply_mix(c, t, px + row * s.d, pw, u.data(), s.d);
        apply_core(c, t, s, row % s.n, u.data(), py + row * s.f);
      }
    });
  });
  return y;
}

LrpeGrads lrpe_backward(const LrpeKernelConfig& c, const Tensor& x_in, const Tensor& theta,
                        const Tensor& w_in, const Tensor& permutation, const Tensor& grad_y) {
  const char* op = "lrpe_backward";
  const LrpeDims s = check_inputs(op, c, x_in, theta, w_in, permutation);
  Shape y_shape = x_in.shape();
  y_shape.back() = s.f;
  ROTA_CHECK(grad_y.shape() == y_shape, "{}: grad {} for output {}", op, shape_str(grad_y.shape()),
             shape_str(y_shape));
  const Tensor x = x_in.contiguous();
  const Tensor g = grad_y.contiguous();
  LrpeGrads grads;
  grads.dx = Tensor::empty(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const PositionTables<T> t = build_tables<T>(c, s, theta, permutation);
    const bool householder = c.mix == LrpeMix::kHouseholder;
    const Tensor w = householder ? w_in.contiguous() : Tensor();
    const T* pw = householder ? w.data<T>() : nullptr;
    const T* px = x.data<T>();
    const T* pg = g.data<T>();
    T* pdx = grads.dx.data<T>();
    const int64_t blocks = num_blocks(s.rows);
    // Partial sums per block: θ [blocks, m] and w [blocks, D], accumulated in double.
    std::vector<double> theta_partial(blocks * s.m, 0.0);
    std::vector<double> w_partial(householder ? blocks * s.d : 0, 0.0);
    parallel_for(blocks, (s.rows / blocks + 1) * 6 * s.f, [&](int64_t b0, int64_t b1) {
      std::vector<T> u(s.d);
      std::vector<T> gu(s.d);
      for (int64_t b = b0; b < b1; ++b) {
        double* gth = theta_partial.data() + b * s.m;
        double* gw = householder ? w_partial.data() + b * s.d : nullptr;
        const int64_t row_begin = s.rows * b / blocks;
        const int64_t row_end = s.rows * (b + 1) / blocks;
        for (int64_t row = row_begin; row < row_end; ++row) {
          const int64_t r = row % s.n;
          const double pos = static_cast<double>(c.offset + r);
          const T* xr = px + row * s.d;
          const T* gy = pg + row * s.f;
          apply_mix(c, t, xr, pw, u.data(), s.d);
          // gu = Λ(s)ᵀ gy, and θ's gradient.
          switch (c.core) {
            case LrpeCore::kUnitary: {
              const T* cs = t.cos.data() + r * s.m;
              const T* sn = t.sin.data() + r * s.m;
              for (int64_t j = 0; j < s.d; ++j) {
                const T gc = gy[j];
                const T gs = gy[s.d + j];
                gu[j] = gc * cs[j] + gs * sn[j];
                // s·(gσ·yc − gc·yσ) with yc = u cos, yσ = u sin.
                gth[j] += pos * static_cast<double>(u[j] * (gs * cs[j] - gc * sn[j]));
              }
              break;
            }
            case LrpeCore::kOrthogonal: {
              const T* cs = t.cos.data() + r * s.m;
              const T* sn = t.sin.data() + r * s.m;
              for (int64_t k = 0; k < s.m; ++k) {
                int64_t i0, i1;
                pair_indices(c.pairing, k, s.m, &i0, &i1);
                const T a = u[i0], bb = u[i1], g0 = gy[i0], g1 = gy[i1];
                gu[i0] = g0 * cs[k] + g1 * sn[k];
                gu[i1] = -g0 * sn[k] + g1 * cs[k];
                const T y0 = a * cs[k] - bb * sn[k];
                const T y1 = a * sn[k] + bb * cs[k];
                gth[k] += pos * static_cast<double>(g1 * y0 - g0 * y1);
              }
              if (s.d % 2 == 1) gu[s.d - 1] = gy[s.d - 1];
              break;
            }
            case LrpeCore::kPermutation: {
              const int64_t* pp = t.perm_power.data() + r * s.d;
              for (int64_t j = 0; j < s.d; ++j) gu[pp[j]] = gy[j];
              break;
            }
          }
          // gx = Pᵀ gu, and w's gradient.
          T* gx = pdx + row * s.d;
          switch (c.mix) {
            case LrpeMix::kIdentity:
              std::copy(gu.begin(), gu.end(), gx);
              break;
            case LrpeMix::kHouseholder: {
              T guw = 0, xw = 0;
              for (int64_t j = 0; j < s.d; ++j) {
                guw += gu[j] * pw[j];
                xw += xr[j] * pw[j];
              }
              for (int64_t j = 0; j < s.d; ++j) {
                gx[j] = gu[j] - T(2) * guw * pw[j];
                gw[j] += -2.0 * static_cast<double>(xw * gu[j] + guw * xr[j]);
              }
              break;
            }
            case LrpeMix::kOddEven:
              for (int64_t j = 0; j < s.d; ++j) gx[t.odd_even[j]] = gu[j];
              break;
          }
        }
      }
    });
    // Deterministic reduction over blocks in block order.
    auto reduce_blocks = [&](const std::vector<double>& partial, int64_t width) {
      std::vector<double> total(width, 0.0);
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t j = 0; j < width; ++j) total[j] += partial[b * width + j];
      }
      return tensor_from(total, {width}, x.dtype());
    };
    if (c.core != LrpeCore::kPermutation) grads.dtheta = reduce_blocks(theta_partial, s.m);
    if (householder) grads.dw = reduce_blocks(w_partial, s.d);
  });
  return grads;
}

}  // namespace rota::backend
