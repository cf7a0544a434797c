// Global gradient norm (blocked, deterministic double accumulation) and in-place rescaling.
#include "framework/optim/clip.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::optim {

namespace {

/// Elements per partial sum. Fixed (not per thread) so the summation order, and hence the
/// exact double result, is the same for any thread count — resumed runs stay bit-exact.
constexpr int64_t kBlock = 4096;

/// The parameters whose gradients count: those with a gradient, each once.
std::vector<Variable> with_unique_grads(const std::vector<Variable>& params) {
  std::vector<Variable> out;
  std::unordered_set<const VariableImpl*> seen;
  for (const Variable& param : params) {
    if (!param.defined() || !param.grad().defined()) continue;
    if (seen.insert(param.impl()).second) out.push_back(param);
  }
  return out;
}

/// Independent accumulators per block. One accumulator is a serial chain of dependent adds
/// (4-cycle latency each, and the compiler may not reorder FP adds); eight fixed lanes let the
/// adds overlap and vectorise while keeping the summation order fixed.
constexpr int kLanes = 8;

// g: [N] contiguous. Returns sum_i g[i]^2 in double: per-block partials, blocks in parallel,
// partials added in block order.
template <typename T>
double sum_of_squares(const T* g, int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  backend::parallel_for(blocks, kBlock, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t lo = b * kBlock;
      const int64_t hi = std::min(n, lo + kBlock);
      double lane[kLanes] = {};
      int64_t i = lo;
      for (; i + kLanes <= hi; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
          const double x = static_cast<double>(g[i + j]);
          lane[j] += x * x;
        }
      }
      for (; i < hi; ++i) {
        const double x = static_cast<double>(g[i]);
        lane[0] += x * x;
      }
      double s = 0.0;
      for (int j = 0; j < kLanes; ++j) s += lane[j];
      partial[b] = s;
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

// g: [N] contiguous; g = round_T(double(g) * scale). The product is formed in double and
// rounded once, so an f32 gradient gets the correctly rounded scaled value (not the error of a
// scale first rounded to float); the loop stays memory-bound either way.
template <typename T>
void scale_in_place(T* g, int64_t n, double scale) {
  backend::parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) g[i] = static_cast<T>(static_cast<double>(g[i]) * scale);
  });
}

}  // namespace

double grad_norm(const std::vector<Variable>& params) {
  double total = 0.0;
  for (const Variable& param : with_unique_grads(params)) {
    const Tensor g = param.grad().contiguous();
    total += backend::dispatch_floating(g.dtype(), "grad_norm", [&](auto tag) {
      using T = decltype(tag);
      return sum_of_squares<T>(g.data<T>(), g.numel());
    });
  }
  // A NaN element makes the sum NaN; an inf (or a square overflowing double) makes it inf.
  return std::sqrt(total);
}

double clip_grad_norm(const std::vector<Variable>& params, double max_norm) {
  ROTA_CHECK(max_norm > 0.0 && std::isfinite(max_norm),
             "clip_grad_norm: max_norm must be positive and finite, got {}", max_norm);
  const double norm = grad_norm(params);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const double scale = max_norm / norm;
  for (Variable param : with_unique_grads(params)) {
    Tensor grad = param.grad();
    if (!grad.is_contiguous()) {
      // Rare (a hand-set strided grad): scale a contiguous copy and install it.
      grad = grad.contiguous();
      param.set_grad(grad);
    }
    backend::dispatch_floating(grad.dtype(), "clip_grad_norm", [&](auto tag) {
      using T = decltype(tag);
      scale_in_place<T>(grad.data<T>(), grad.numel(), scale);
    });
  }
  return norm;
}

}  // namespace rota::optim
