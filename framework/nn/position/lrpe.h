// LRPE module (Type 1/2/3 × P = identity / Householder / odd-even) and RoPE as its special case.
#pragma once

#include "framework/backend/fused/lrpe.h"
#include "framework/nn/module.h"
#include "framework/tensor/random.h"

namespace rota::nn {

/// A rescaling of RoPE's frozen frequencies for contexts longer than the model was trained at
/// (Hugging Face's rope_scaling of the same names).
struct RopeScaling {
  enum class Kind {
    kNone,
    kLinear,  // θ_k / factor (position interpolation)
    kLlama3,  // Llama 3.1's wavelength-dependent rule (rope_scaled_frequency)
  };
  Kind kind = Kind::kNone;
  double factor = 1.0;                    // > 0
  double low_freq_factor = 1.0;           // kLlama3: > 0, < high_freq_factor
  double high_freq_factor = 4.0;          // kLlama3
  int64_t original_max_positions = 8192;  // kLlama3: the pretraining context L, >= 1
};

/// θ after `scaling`: linear θ/factor; Llama 3 with wavelength λ = 2π/θ: θ/factor where
/// λ > L/low_freq_factor, θ where λ < L/high_freq_factor, else (1 − s)·θ/factor + s·θ with
/// s = (L/λ − low_freq_factor)/(high_freq_factor − low_freq_factor). Throws rota::Error on
/// settings outside the ranges above.
double rope_scaled_frequency(double theta, const RopeScaling& scaling);

/// One LRPE configuration (Type × P × θ mode). As a PositionEncoding alternative
/// (position_encoding.h) head_dim and dtype are filled in by the attention layer.
struct LrpeOptions {
  int64_t head_dim = 0;                                     // D
  backend::LrpeCore core = backend::LrpeCore::kOrthogonal;  // Type 1 / 2 / 3
  backend::LrpePairing pairing = backend::LrpePairing::kAdjacent;
  backend::LrpeP p = backend::LrpeP::kHouseholder;  // identity / Householder / odd-even
  /// Householder P only: true trains the raw v (forward uses w = v / (‖v‖ + 1e-6)); false draws
  /// v ~ N(0, I), normalises it once at init and freezes it (the paper's main configs).
  bool learn_householder = true;
  bool learn_theta = true;      // θ learnable (Types 1, 2); frozen when false
  double theta_base = 10000.0;  // θ_j = base^(−2j/D)
  /// Applied to the initial θ (RoPE's frozen frequencies; rope_scaled_frequency).
  RopeScaling theta_scaling;
  DType dtype = DType::kF32;
};

/// Applies W_s = Λ(s)·P (the trailing Pᴴ dropped, exact for orthogonal P) to attention
/// features. One instance per layer, shared by all heads and by queries and keys.
/// Parameters / buffers: `theta` [D] (Type 1) or [⌊D/2⌋] (Type 2), frozen when !learn_theta;
/// `householder_v` [D] (P = Householder: trainable with learn_householder, else a frozen unit
/// vector); buffer `permutation` [D] i64 (Type 3, drawn once at init).
class Lrpe : public Module {
 public:
  std::optional<ParameterRole> parameter_role() const override {
    return ParameterRole::kPositional;
  }
  Lrpe(const LrpeOptions& options, Generator& gen);

  /// x: [..., N, D] with position s = offset + n for row n → [..., N, F] (fused kernel).
  Variable forward(const Variable& x, int64_t offset = 0) const;
  /// forward(one_plus_elu(x), offset) in one kernel: linear attention's feature map fused in,
  /// reading x (typically a head view of the q/k projection) in place; same bits.
  Variable forward_of_one_plus_elu(const Variable& x, int64_t offset = 0) const;
  /// The same transform composed from autograd primitives (matmul, index_select, gather,
  /// concat, elementwise): the reference the fused kernel is tested against.
  Variable forward_composed(const Variable& x, int64_t offset = 0) const;

  /// F: 2D for Type 1, D otherwise.
  int64_t feature_dim() const;
  /// True when the features can become negative (every LRPE variant can, except Type 3 with
  /// a permutation P or identity, which only reorders positive features).
  bool makes_features_signed() const;
  const LrpeOptions& options() const { return options_; }

 private:
  /// The unit Householder vector in use (differentiable for the learnable variant).
  Variable householder_unit_vector() const;
  backend::LrpeKernelConfig kernel_config(int64_t offset) const;
  Variable forward_with(const backend::LrpeKernelConfig& config, const Variable& x) const;

  LrpeOptions options_;
  Variable theta_;
  Variable householder_v_;
  Tensor permutation_;
};

/// Rotary position embedding: Type 2 rotation, identity P, frozen θ_k = base^(−2k/D) rescaled
/// by `scaling`; adjacent pairs (2k, 2k+1) by default, like the layers, the recipe and the docs.
LrpeOptions rope_options(int64_t head_dim,
                         backend::LrpePairing pairing = backend::LrpePairing::kAdjacent,
                         double base = 10000.0, DType dtype = DType::kF32,
                         const RopeScaling& scaling = {});

}  // namespace rota::nn
