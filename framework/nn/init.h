// Parameter initialisers (normal, uniform, Xavier, Kaiming, truncated normal), in place.
#pragma once

#include <cstdint>

#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"

namespace rota::nn::init {

// Every initialiser writes into the given tensor in place (any strides; f32, f64 or bf16) and
// returns it (a handle sharing the same storage), so it can wrap a fresh tensor:
//   register_parameter("weight", init::xavier_uniform_(Tensor::empty({out, in}), gen));
// Values are drawn in double, in row-major order, from `gen`: the same seed gives the same
// values whatever the dtype or the thread count.

/// Fan-in and fan-out of a weight. 2-D [out, in]: fan_in = in, fan_out = out. Rank > 2
/// [out, in, k1, k2, ...] (convolution-style): both are multiplied by the receptive field
/// k1 * k2 * .... Rank < 2 has no fans (throws).
struct Fans {
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};
Fans compute_fans(const Shape& shape);

enum class FanMode { kFanIn, kFanOut };

/// Nonlinearity following the layer, for the gain of Kaiming / Xavier initialisation.
enum class Nonlinearity { kLinear, kSigmoid, kTanh, kRelu, kLeakyRelu, kGelu };

/// Recommended gain (PyTorch's calculate_gain where it defines one):
///   linear, sigmoid: 1;  tanh: 5/3;  relu: sqrt(2);  leaky_relu(a): sqrt(2 / (1 + a^2)).
/// GELU (PyTorch has no value): the same rule that gives relu and leaky_relu theirs, i.e.
/// 1 / sqrt(E[f(z)^2]) for z ~ N(0, 1), which keeps the second moment of the activations
/// constant through the layer (He et al. 2015). For f = gelu, E[z^2 Phi(z)^2] =
/// 1/3 + 1/(2 pi sqrt(3)) ~ 0.4252, so the gain is ~1.5335: above relu's sqrt(2) because GELU
/// passes less energy than ReLU (0.4252 vs 0.5). `param` is the negative slope of leaky_relu
/// and ignored otherwise.
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);

/// Standard normal quantile Phi^-1(p) for p in (0, 1), accurate to ~1e-15 relative (Acklam's
/// rational approximation refined by one Halley step on erfc).
double normal_quantile(double p);

/// N(mean, stddev^2) samples.
Tensor normal_(const Tensor& tensor, Generator& gen, double mean = 0.0, double stddev = 1.0);
/// U[low, high) samples.
Tensor uniform_(const Tensor& tensor, Generator& gen, double low = 0.0, double high = 1.0);
Tensor constant_(const Tensor& tensor, double value);
Tensor zeros_(const Tensor& tensor);
Tensor ones_(const Tensor& tensor);

/// Glorot: U[-b, b] with b = gain * sqrt(6 / (fan_in + fan_out)) (std = gain*sqrt(2/(in+out))).
Tensor xavier_uniform_(const Tensor& tensor, Generator& gen, double gain = 1.0);
/// Glorot: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(const Tensor& tensor, Generator& gen, double gain = 1.0);

/// He: U[-b, b] with b = sqrt(3) * gain / sqrt(fan), fan chosen by `mode`,
/// gain = calculate_gain(nonlinearity, negative_slope). PyTorch's defaults
/// (fan_in, leaky_relu with a = 0, i.e. gain sqrt(2)).
Tensor kaiming_uniform_(const Tensor& tensor, Generator& gen, FanMode mode = FanMode::kFanIn,
                        Nonlinearity nonlinearity = Nonlinearity::kLeakyRelu,
                        double negative_slope = 0.0);
/// He: N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(const Tensor& tensor, Generator& gen, FanMode mode = FanMode::kFanIn,
                       Nonlinearity nonlinearity = Nonlinearity::kLeakyRelu,
                       double negative_slope = 0.0);

/// N(mean, stddev^2) conditioned on [low, high] (absolute bounds, as in PyTorch), sampled
/// exactly by inverting the CDF — no clamping, so there is no mass piled up at the bounds.
/// Intervals entirely in one tail are mirrored to the lower tail, where erfc keeps relative
/// precision, so even [mean + 6 std, mean + 8 std] is sampled correctly.
Tensor trunc_normal_(const Tensor& tensor, Generator& gen, double mean = 0.0, double stddev = 1.0,
                     double low = -2.0, double high = 2.0);

}  // namespace rota::nn::init
