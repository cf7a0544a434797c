// Fused LRPE kernel: y_s = Λ(s) · (P x_s), forward and backward in one pass over the features.
#pragma once

#include <vector>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// The core matrix Λ(s) (lrpe.md section 3).
enum class LrpeCore {
  kUnitary,      // Type 1: y = [u∘cos(sθ), u∘sin(sθ)], F = 2D, θ: [D]
  kOrthogonal,   // Type 2: 2×2 rotations R(sθ_k) on channel pairs, F = D, θ: [⌊D/2⌋]
  kPermutation,  // Type 3: y[j] = u[π^s(j)] for a fixed permutation π, F = D, no θ
};

/// Channel pairing of Type 2: adjacent (2k, 2k+1) or halves (k, k+⌊D/2⌋); an odd last
/// channel passes through unrotated.
enum class LrpePairing { kAdjacent, kHalf };

/// The orthogonal P applied before Λ(s) (the trailing Pᴴ is dropped: exact for orthogonal P).
/// This is what the kernel applies; whether a Householder vector is trained or frozen is the
/// module's choice (nn::LrpeOptions::learn_householder).
enum class LrpeP {
  kIdentity,
  kHouseholder,  // u = x − 2(x·w)w with a unit vector w: [D]
  kOddEven,      // u[2k] = x[k], u[2k+1] = x[⌈D/2⌉+k]
};

struct LrpeKernelConfig {
  LrpeCore core = LrpeCore::kOrthogonal;
  LrpePairing pairing = LrpePairing::kAdjacent;
  LrpeP p = LrpeP::kHouseholder;
  int64_t offset = 0;  // position of the first row (s = offset + n), for cached generation
  /// Apply LRPE to φ(x) = 1 + elu(x) instead of x (linear attention's feature map, fused): the
  /// forward maps each row on the fly; the backward recomputes φ(x) and multiplies the input
  /// gradient by φ'(x). Same bits as one_plus_elu followed by the unfused kernel.
  bool input_one_plus_elu = false;
};

/// Feature dimension F of the output for input dimension D.
int64_t lrpe_output_dim(LrpeCore core, int64_t d);

/// x: [..., N, D] (positions along N; any view whose last dim is unit-stride is read in place,
/// e.g. the head view [B, H, N, D] of a [B, N, 3E] projection); theta: [D] (Type 1), [⌊D/2⌋] (Type
/// 2), undefined (Type 3); w: [D] unit vector when p = Householder, else undefined; permutation:
/// [D] i64 when core = Type 3, else undefined. Returns y: [..., N, F].
Tensor lrpe_forward(const LrpeKernelConfig& config, const Tensor& x, const Tensor& theta,
                    const Tensor& w, const Tensor& permutation);

struct LrpeGrads {
  Tensor dx;      // [..., N, D], dense in x's memory order (empty_in_layout_of)
  Tensor dtheta;  // like theta (undefined for Type 3)
  Tensor dw;      // [D] (undefined unless Householder)
};

/// Backward (lrpe.md section 6): gu = Λ(s)ᵀ gy; Type 1 gθ_j += s(gσ_j yc_j − gc_j yσ_j);
/// Type 2 gθ_k += s(g1 y0 − g0 y1); Type 3 gu[π^s(j)] = gy[j]; Householder
/// gx = gu − 2(gu·w)w and gw += −2[(x·w)gu + (gu·w)x]; odd-even gx[idx[j]] = gu[j].
/// θ and w gradients are summed over every row in a fixed split of the rows into blocks (f32:
/// float partial sums over at most 16 rows added into double per block), so results do not
/// depend on the thread count. f32 runs the AVX-512, AVX2+FMA or portable build (run-time
/// choice, ROTA_MAX_CPU_ISA caps it); f64 always the portable one.
LrpeGrads lrpe_backward(const LrpeKernelConfig& config, const Tensor& x, const Tensor& theta,
                        const Tensor& w, const Tensor& permutation, const Tensor& grad_y);

/// π^s for every position: table[s][j] = π^s(j), s in [offset, offset+n). Built from the
/// cycle decomposition, so any length works (no table limit). Exposed for tests.
std::vector<int64_t> permutation_power_table(const Tensor& permutation, int64_t offset, int64_t n);

}  // namespace rota::backend
