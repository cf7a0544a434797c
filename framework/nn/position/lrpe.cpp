// LRPE module: parameters, fused forward, and the composed reference forward.
#include "framework/nn/position/lrpe.h"

#include <cmath>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/indexing.h"
#include "framework/autograd/ops/lrpe.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"
#include "framework/nn/init.h"

namespace rota::nn {

using backend::LrpeCore;
using backend::LrpeP;
using backend::LrpePairing;

Lrpe::Lrpe(const LrpeOptions& options, Generator& gen) : options_(options) {
  const int64_t d = options.head_dim;
  ROTA_CHECK(d >= 2, "Lrpe: head_dim must be at least 2, got {}", d);
  if (options.core != LrpeCore::kPermutation) {
    // θ_j = base^(−2j/D): j < D for Type 1 (twice RoPE's count of angles, reaching much lower
    // frequencies), j < ⌊D/2⌋ for Type 2. Frozen Type 2 uses the rotated width e = D − D%2 in
    // the exponent, as the reference does (identical for even D).
    const int64_t m = options.core == LrpeCore::kUnitary ? d : d / 2;
    const double denom =
        options.core == LrpeCore::kOrthogonal && !options.learn_theta ? d - d % 2 : d;
    std::vector<double> theta(m);
    for (int64_t j = 0; j < m; ++j) {
      theta[j] = rope_scaled_frequency(std::pow(options.theta_base, -2.0 * j / denom),
                                       options.theta_scaling);
    }
    theta_ =
        register_parameter("theta", tensor_from(theta, {m}, options.dtype), options.learn_theta);
  }
  if (options.p == LrpeP::kHouseholder) {
    Tensor v = randn({d}, gen, 0.0, 1.0, options.dtype);
    if (!options.learn_householder) {
      double norm = 0;
      for (double x : v.to_double_vector()) norm += x * x;
      v = tensor_from(
          [&] {
            std::vector<double> u = v.to_double_vector();
            for (double& x : u) x /= std::sqrt(norm);
            return u;
          }(),
          {d}, options.dtype);
    }
    householder_v_ = register_parameter("householder_v", v, options.learn_householder);
  }
  if (options.core == LrpeCore::kPermutation) {
    permutation_ = register_buffer("permutation", randperm(d, gen));
  }
}

int64_t Lrpe::feature_dim() const {
  return backend::lrpe_output_dim(options_.core, options_.head_dim);
}

bool Lrpe::makes_features_signed() const {
  const bool reorders_only = options_.core == LrpeCore::kPermutation &&
                             (options_.p == LrpeP::kIdentity || options_.p == LrpeP::kOddEven);
  return !reorders_only;
}

backend::LrpeKernelConfig Lrpe::kernel_config(int64_t offset) const {
  backend::LrpeKernelConfig c;
  c.core = options_.core;
  c.pairing = options_.pairing;
  c.p = options_.p;
  c.offset = offset;
  return c;
}

Variable Lrpe::householder_unit_vector() const {
  if (!options_.learn_householder) return householder_v_;
  // w = v / (‖v‖ + 1e-6), differentiable so v receives its gradient through w.
  const Variable norm = sqrt(sum(square(householder_v_)));
  return householder_v_ / (norm + 1e-6);
}

Variable Lrpe::forward(const Variable& x, int64_t offset) const {
  return forward_with(kernel_config(offset), x);
}

Variable Lrpe::forward_of_one_plus_elu(const Variable& x, int64_t offset) const {
  backend::LrpeKernelConfig config = kernel_config(offset);
  config.input_one_plus_elu = true;
  return forward_with(config, x);
}

Variable Lrpe::forward_with(const backend::LrpeKernelConfig& config, const Variable& x) const {
  ROTA_CHECK(x.dim() >= 2 && x.size(-1) == options_.head_dim,
             "Lrpe: input {} does not end in head_dim = {}", shape_str(x.shape()),
             options_.head_dim);
  return lrpe(config, x, theta_,
              options_.p == LrpeP::kHouseholder ? householder_unit_vector() : Variable(),
              permutation_);
}

Variable Lrpe::forward_composed(const Variable& x, int64_t offset) const {
  const int64_t d = options_.head_dim;
  const int64_t n = x.size(-2);
  const DType dtype = x.dtype();
  // u = P x
  Variable u = x;
  if (options_.p == LrpeP::kHouseholder) {
    const Variable w = householder_unit_vector();
    const Variable xw = matmul(x, reshape(w, {d, 1}));  // [..., N, 1]
    u = x - (xw * w) * 2.0;
  } else if (options_.p == LrpeP::kOddEven) {
    std::vector<double> idx(d);
    const int64_t h = (d + 1) / 2;
    for (int64_t j = 0; j < d; ++j) idx[j] = j % 2 == 0 ? j / 2 : h + (j - 1) / 2;
    u = index_select(x, -1, tensor_from(idx, {d}, DType::kI64));
  }
  if (options_.core == LrpeCore::kPermutation) {
    const std::vector<int64_t> table = backend::permutation_power_table(permutation_, offset, n);
    Tensor index = Tensor::empty({n, d}, DType::kI64);
    std::copy(table.begin(), table.end(), index.data<int64_t>());
    Shape full = x.shape();
    return gather(u, -1, index.expand(full).contiguous());
  }
  // angles[s, k] = (offset + s) θ_k
  const Variable positions(
      arange(static_cast<double>(offset), static_cast<double>(offset + n), 1.0, dtype)
          .reshape({n, 1}));
  const Variable angles = positions * reshape(theta_, {1, theta_.size(0)});  // [N, m]
  if (options_.core == LrpeCore::kUnitary) {
    return concat({u * cos(angles), u * sin(angles)}, -1);
  }
  // Type 2: y = u ∘ C + partner(u) ∘ S, with C, S the per-channel cos / signed sin.
  const int64_t m = d / 2;
  std::vector<double> angle_of(d, static_cast<double>(m));  // leftover channel → angle 0
  std::vector<double> partner(d), sign(d, 0.0);
  for (int64_t j = 0; j < d; ++j) partner[j] = j;
  for (int64_t k = 0; k < m; ++k) {
    const int64_t i0 = options_.pairing == LrpePairing::kAdjacent ? 2 * k : k;
    const int64_t i1 = options_.pairing == LrpePairing::kAdjacent ? 2 * k + 1 : k + m;
    angle_of[i0] = angle_of[i1] = k;
    partner[i0] = i1;
    partner[i1] = i0;
    sign[i0] = -1.0;
    sign[i1] = 1.0;
  }
  const Variable padded = concat({angles, Variable(zeros({n, 1}, dtype))}, -1);  // [N, m+1]
  const Variable per_channel = index_select(padded, -1, tensor_from(angle_of, {d}, DType::kI64));
  const Variable swapped = index_select(u, -1, tensor_from(partner, {d}, DType::kI64));
  return u * cos(per_channel) +
         swapped * (sin(per_channel) * Variable(tensor_from(sign, {d}, dtype)));
}

double rope_scaled_frequency(double theta, const RopeScaling& scaling) {
  if (scaling.kind == RopeScaling::Kind::kNone) return theta;
  ROTA_CHECK(std::isfinite(scaling.factor) && scaling.factor > 0,
             "RoPE scaling: factor must be > 0, got {}", scaling.factor);
  if (scaling.kind == RopeScaling::Kind::kLinear) return theta / scaling.factor;
  const double low = scaling.low_freq_factor, high = scaling.high_freq_factor;
  ROTA_CHECK(std::isfinite(low) && std::isfinite(high) && low > 0 && low < high,
             "RoPE llama3 scaling: need 0 < low_freq_factor < high_freq_factor, got {} and {}", low,
             high);
  ROTA_CHECK(scaling.original_max_positions >= 1,
             "RoPE llama3 scaling: original_max_positions must be >= 1, got {}",
             scaling.original_max_positions);
  const double context = static_cast<double>(scaling.original_max_positions);
  const double wavelength = 2.0 * M_PI / theta;
  if (wavelength > context / low) return theta / scaling.factor;  // low frequencies: stretched
  if (wavelength < context / high) return theta;                  // high frequencies: kept
  const double s = (context / wavelength - low) / (high - low);
  return (1.0 - s) * theta / scaling.factor + s * theta;
}

LrpeOptions rope_options(int64_t head_dim, backend::LrpePairing pairing, double base, DType dtype,
                         const RopeScaling& scaling) {
  LrpeOptions o;
  o.head_dim = head_dim;
  o.core = LrpeCore::kOrthogonal;
  o.pairing = pairing;
  o.p = LrpeP::kIdentity;
  o.learn_theta = false;
  o.theta_base = base;
  o.theta_scaling = scaling;
  o.dtype = dtype;
  return o;
}

}  // namespace rota::nn
