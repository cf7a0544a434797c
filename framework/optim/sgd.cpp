// SGD update kernel (momentum / Nesterov / L2 decay), in place over contiguous f32/f64 params.
#include "framework/optim/sgd.h"

#include <cmath>

#include "framework/backend/cpu/dispatch.h"
#include "framework/backend/cpu/parallel.h"

namespace rota::optim {

namespace {

struct SgdCoefficients {
  double lr, weight_decay, momentum, dampening;
  bool nesterov;
  bool first_update;  // the momentum buffer is initialised to g instead of blended
};

// The coefficients rounded to the parameter type, and the loop-invariant flags.
template <typename T>
struct SgdScalars {
  T lr, weight_decay, momentum, keep;  // keep = 1 - dampening
  bool use_momentum, first_update, nesterov;
};

// p, g, b: [N], elements [begin, end) (b unused when momentum == 0). Per element:
//   g' = g + wd * p;  b = first ? g' : momentum * b + (1 - dampening) * g';
//   d = momentum == 0 ? g' : (nesterov ? g' + momentum * b : b);  p -= lr * d.
// The flags are loop-invariant locals, so GCC unswitches the loop at -O3 and each variant
// vectorises. (A plain function with restrict pointers and by-value scalars: through a lambda's
// captured references the compiler must reload everything after each store.)
template <typename T>
void sgd_range(T* __restrict p, const T* __restrict g, T* __restrict b, int64_t begin, int64_t end,
               const SgdScalars<T> s) {
  for (int64_t i = begin; i < end; ++i) {
    T d = g[i] + s.weight_decay * p[i];
    if (s.use_momentum) {
      b[i] = s.first_update ? d : s.momentum * b[i] + s.keep * d;
      d = s.nesterov ? d + s.momentum * b[i] : b[i];
    }
    p[i] -= s.lr * d;
  }
}

template <typename T>
void sgd_update(T* p, const T* g, T* b, int64_t n, const SgdCoefficients& c) {
  const SgdScalars<T> s{static_cast<T>(c.lr),
                        static_cast<T>(c.weight_decay),
                        static_cast<T>(c.momentum),
                        static_cast<T>(1.0 - c.dampening),
                        b != nullptr,
                        c.first_update,
                        c.nesterov};
  backend::parallel_for(n, 4,
                        [&](int64_t begin, int64_t end) { sgd_range<T>(p, g, b, begin, end, s); });
}

void check_options(const SgdOptions& o) {
  ROTA_CHECK(std::isfinite(o.momentum) && o.momentum >= 0.0, "SGD: momentum {} < 0", o.momentum);
  ROTA_CHECK(std::isfinite(o.dampening), "SGD: dampening {}", o.dampening);
  ROTA_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
             "SGD: nesterov needs momentum > 0 and dampening 0 (got momentum {}, dampening {})",
             o.momentum, o.dampening);
}

}  // namespace

SGD::SGD(std::vector<Variable> params, const SgdOptions& options)
    : SGD(std::vector<ParamGroup>{make_param_group(std::move(params), options.lr,
                                                   options.weight_decay)},
          options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SgdOptions& options)
    : Optimizer(std::move(groups), "SGD"), options_(options) {
  check_options(options_);
}

void SGD::update(const ParamGroup& group, const Tensor& param, const Tensor& grad,
                 ParamState& state) {
  Tensor buffer;
  bool first_update = false;
  if (options_.momentum != 0.0) {
    auto it = state.buffers.find("momentum_buffer");
    first_update = it == state.buffers.end();
    if (first_update) it = state.buffers.emplace("momentum_buffer", empty_like(param)).first;
    buffer = it->second;
  }
  const SgdCoefficients c{group.lr,           group.weight_decay, options_.momentum,
                          options_.dampening, options_.nesterov,  first_update};
  backend::dispatch_floating(param.dtype(), "SGD.step", [&](auto tag) {
    using T = decltype(tag);
    sgd_update<T>(param.data<T>(), grad.data<T>(), buffer.defined() ? buffer.data<T>() : nullptr,
                  param.numel(), c);
  });
}

}  // namespace rota::optim
