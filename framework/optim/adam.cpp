// Adam / AdamW update kernel, in place over contiguous f32/f64 params and moment buffers.
#include "framework/optim/adam.h"

#include <algorithm>
#include <cmath>

#include <emmintrin.h>  // SSE2: the x86-64 baseline

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::optim {

namespace {

struct AdamCoefficients {
  double l2_decay;      // Adam: g += l2_decay * p (0 for AdamW)
  double decay_factor;  // AdamW: p *= decay_factor = 1 - lr * weight_decay (1 for Adam)
  double beta1, beta2, eps;
  double step_size;              // lr / (1 - beta1^t)
  double bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

// The coefficients rounded to the parameter type.
template <typename T>
struct AdamScalars {
  T l2, decay_factor, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bc2_sqrt;
};

/// Elements per chunk of the three-pass update below (its scratch fits easily in L1).
constexpr int64_t kChunk = 256;

// x: [n]; x = sqrt(x). std::sqrt must set errno for negative inputs (we do not build with
// -fno-math-errno), which keeps the compiler from vectorising any loop that calls it; the SSE
// (x86-64 baseline) forms are the same correctly rounded sqrt, 4 floats / 2 doubles at a time.
void sqrt_in_place(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}
void sqrt_in_place(double* x, int64_t n) {
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) _mm_storeu_pd(x + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}

// p, g, m, v: [N], elements [begin, end). Per element (PyTorch's order of operations, so f32
// rounds the same way):
//   p *= decay_factor;  g' = g + l2 * p;  m += (1 - beta1) * (g' - m);
//   v = beta2 * v + (1 - beta2) * g'^2;  p -= step_size * m / (sqrt(v) / sqrt(bc2) + eps).
// Done per chunk in three passes — moments (vectorised), sqrt(v) into a scratch buffer (SSE),
// the parameter update (vectorised) — which is ~4x faster than one scalar loop. A plain
// function with restrict pointers and by-value scalars rather than a lambda capturing by
// reference: through captured references the compiler must assume the stores may change the
// pointers and scalars themselves, and it would not vectorise either pass.
template <typename T>
void adam_range(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
                int64_t begin, int64_t end, const AdamScalars<T> s) {
  T root[kChunk];
  for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
    const int64_t len = std::min(kChunk, end - c0);
    T* __restrict pc = p + c0;
    const T* __restrict gc = g + c0;
    T* __restrict mc = m + c0;
    T* __restrict vc = v + c0;
    for (int64_t j = 0; j < len; ++j) {
      const T pj = pc[j] * s.decay_factor;
      const T gj = gc[j] + s.l2 * pj;
      const T mj = mc[j] + s.one_minus_beta1 * (gj - mc[j]);
      const T vj = s.beta2 * vc[j] + s.one_minus_beta2 * gj * gj;
      pc[j] = pj;
      mc[j] = mj;
      vc[j] = vj;
      root[j] = vj;
    }
    sqrt_in_place(root, len);
    for (int64_t j = 0; j < len; ++j) {
      pc[j] = pc[j] - s.step_size * mc[j] / (root[j] / s.bc2_sqrt + s.eps);
    }
  }
}

// Scalars are computed once in double and rounded to T, as PyTorch does for its scalar args.
template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, int64_t n, const AdamCoefficients& c) {
  const AdamScalars<T> s{static_cast<T>(c.l2_decay),    static_cast<T>(c.decay_factor),
                         static_cast<T>(1.0 - c.beta1), static_cast<T>(c.beta2),
                         static_cast<T>(1.0 - c.beta2), static_cast<T>(c.eps),
                         static_cast<T>(c.step_size),   static_cast<T>(c.bias_correction2_sqrt)};
  backend::parallel_for(
      n, 8, [&](int64_t begin, int64_t end) { adam_range<T>(p, g, m, v, begin, end, s); });
}

void check_options(const AdamOptions& o) {
  ROTA_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0, "Adam: beta1 {} is outside [0, 1)", o.beta1);
  ROTA_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0, "Adam: beta2 {} is outside [0, 1)", o.beta2);
  ROTA_CHECK(std::isfinite(o.eps) && o.eps >= 0.0, "Adam: eps {} < 0", o.eps);
}

AdamOptions decoupled(AdamOptions options) {
  options.decoupled_weight_decay = true;
  return options;
}

}  // namespace

Adam::Adam(std::vector<Variable> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{make_param_group(std::move(params), options.lr,
                                                    options.weight_decay)},
           options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Optimizer(std::move(groups), options.decoupled_weight_decay ? "AdamW" : "Adam"),
      options_(options) {
  check_options(options_);
}

void Adam::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                  ParamState& state) {
  auto buffer = [&](const char* suffix) {
    auto it = state.buffers.find(suffix);
    if (it == state.buffers.end()) it = state.buffers.emplace(suffix, zeros_like(param)).first;
    return it->second;
  };
  const Tensor exp_avg = buffer("exp_avg");
  const Tensor exp_avg_sq = buffer("exp_avg_sq");
  const double t = static_cast<double>(state.step);
  AdamCoefficients c{};
  c.l2_decay = options_.decoupled_weight_decay ? 0.0 : group.weight_decay;
  c.decay_factor = options_.decoupled_weight_decay ? 1.0 - group.lr * group.weight_decay : 1.0;
  c.beta1 = options_.beta1;
  c.beta2 = options_.beta2;
  c.eps = options_.eps;
  c.step_size = group.lr / (1.0 - std::pow(options_.beta1, t));
  c.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, t));
  backend::dispatch_floating(param.dtype(), "Adam.step", [&](auto tag) {
    using T = decltype(tag);
    adam_update<T>(param.data<T>(), grad.data<T>(), exp_avg.data<T>(), exp_avg_sq.data<T>(),
                   param.numel(), c);
  });
}

AdamW::AdamW(std::vector<Variable> params, AdamOptions options)
    : Adam(std::move(params), decoupled(options)) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamOptions options)
    : Adam(std::move(groups), decoupled(options)) {}

}  // namespace rota::optim
