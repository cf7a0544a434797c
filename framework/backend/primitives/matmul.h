// Matrix products on tensors (matmul, linear, accumulate): oneDNN for f32/bf16, a loop for f64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// Batched matrix product with NumPy broadcasting of the batch dims, like torch.matmul.
/// a: [..., M, K] ([..., K, M] with transpose_a), b: [..., K, N] ([..., N, K] with transpose_b)
/// → [broadcast(a..., b...), M, N], contiguous. A 1-D a is a [1, K] row and a 1-D b a [K, 1]
/// column whose unit dim is dropped from the result (transpose flags do not apply to 1-D).
/// dtypes: f32·f32 → f32 and bf16·bf16 → f32 through oneDNN (f32 accumulation), f64·f64 → f64
/// through a blocked reference loop. On a CPU where oneDNN has no bf16 matmul
/// (bf16_matmul_native() false) bf16 operands are widened to f32 exactly and multiplied in f32:
/// the same numerics, at f32 speed. Transposed and permuted views are read in place through
/// oneDNN strides; only views oneDNN cannot express (e.g. step slices) are copied.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

/// out += matmul(a, b, transpose_a, transpose_b), fused through oneDNN's sum post-op.
/// out must have exactly the result's shape and dtype; its elements are updated in place
/// (out may be a view; the handle itself is not changed).
void matmul_accumulate(const Tensor& out, const Tensor& a, const Tensor& b,
                       bool transpose_a = false, bool transpose_b = false);

/// The weight gradient of a linear layer, dW = gᵀ·x: g [R, Out], x [R, In] → [Out, In], summed
/// over the R rows. oneDNN reads a transposed left operand fastest when it is the larger side,
/// so with In > Out this computes (xᵀ·g)ᵀ instead (measured: bf16 [256, 4096]ᵀ·[4096, 1024]
/// 726 → 834 GFLOP/s); the same products, summed in another order.
Tensor matmul_weight_gradient(const Tensor& g, const Tensor& x);

/// y = x·weightᵀ + bias with the bias fused into the product.
/// x: [..., In], weight: [Out, In] (PyTorch layout, read as a transposed view), bias: [Out] or
/// undefined for none → y: [..., Out]. bf16 x and weight take an f32 or bf16 bias.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

/// Whether oneDNN multiplies bf16 operands itself on this CPU (it needs AVX-512 in oneDNN 2.x;
/// DNNL_MAX_CPU_ISA may also limit it). Probed once.
bool bf16_matmul_native();

/// The oneDNN products run since the last reset_matmul_time(): how many, and their wall time.
/// Only products called outside OpenMP parallel regions add time (oneDNN parallelises those
/// itself, so their wall time is the product's); products called from inside a parallel region
/// run several at once, so they are only counted (products_in_parallel_regions). f64 products
/// (the plain loop) are not oneDNN's and are not counted.
struct MatmulTime {
  double seconds = 0.0;
  int64_t products = 0;
  int64_t products_in_parallel_regions = 0;
};
MatmulTime matmul_time();
void reset_matmul_time();

/// Number of oneDNN matmul primitives currently cached (one per distinct layout).
size_t matmul_cache_size();
/// Empties the primitive cache.
void clear_matmul_cache();
/// How many operands have been copied to a dense layout because oneDNN could not read their
/// strides (a diagnostic: transposed and permuted views should never count).
int64_t matmul_operand_copies();

}  // namespace rota::backend
