// Block products with bf16 operands and f32 sums for the chunked attention kernels: AMX tiles,
// AVX512-BF16 dot products, or the f32 micro-kernels on the rounded operands, picked at run time.
#pragma once

#include "framework/backend/cpu/small_gemm.h"

namespace rota::backend::small_gemm {

/// What forms a bf16 product.
enum class Bf16Unit {
  kEmulated,    // operands rounded to bf16, then small_gemm's f32 micro-kernels (any CPU)
  kAvx512Bf16,  // VDPBF16PS: each f32 lane adds two bf16 products
  kAmx,         // AMX tiles: TDPBF16PS, a [16, 32] by [32, 16] tile product per instruction
};

const char* bf16_unit_name(Bf16Unit unit);

/// Whether this CPU and OS run `unit`. For AMX that includes the kernel granting this process the
/// tile state (arch_prctl ARCH_REQ_XCOMP_PERM, asked once).
bool bf16_unit_supported(Bf16Unit unit);

/// The fastest supported unit. ROTA_MAX_CPU_ISA below avx512 caps it at kEmulated (so the
/// dispatch test runs see a CPU without bf16 dot products).
Bf16Unit best_bf16_unit();

/// C[M, N] (+)= bf16(A)[M, K]·bf16(B)[K, N] with f32 sums, bf16(x) = x rounded to the nearest
/// even bf16 (float_to_bf16, NaN kept quiet). Layouts as GemmArgs. Every product of two bf16
/// values is exact in f32; the sums run in an order fixed by the unit and the sizes
/// (deterministic, not the same across units). AMX and AVX512-BF16 treat subnormal bf16 operands
/// as zero and flush subnormal sums to zero (the instructions' fixed DAZ/FTZ); with accumulate,
/// A·B is formed first and then added to C. K = 0 zeroes C unless accumulating.
void gemm_bf16(const GemmArgs<float>& args, Bf16Unit unit);
/// gemm_bf16 with best_bf16_unit().
void gemm_bf16(const GemmArgs<float>& args);

}  // namespace rota::backend::small_gemm
