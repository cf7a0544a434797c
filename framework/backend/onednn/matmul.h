// oneDNN matmul primitives: how tensor views map onto oneDNN layouts, and a primitive cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "framework/tensor/tensor.h"

namespace rota::backend::onednn {

/// One matmul operand as oneDNN sees it: dims and strides (in elements) and the element type.
struct OperandLayout {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  DType dtype = DType::kF32;
  bool operator==(const OperandLayout&) const = default;
};

/// The layout of `t`, a [..., R, C] view, as an operand of a matmul whose output has batch
/// dims `batch` (t's batch dims are right-aligned to `batch` and broadcast to it). Missing
/// leading dims become size-1 dims and zero-stride (expanded) batch dims become size-1 dims,
/// which oneDNN broadcasts itself; strides of size-1 dims are canonicalised so equal views get
/// equal layouts (and oneDNN's fast kernels recognise them). Returns nullopt when oneDNN cannot
/// read the matrix part as is: it needs a unit stride along rows or columns and a leading
/// dimension covering the other (so a step-2 slice or an expanded row is not expressible).
std::optional<OperandLayout> operand_layout(const Tensor& t, const Shape& batch);

/// Dense row-major layout of shape `dims`.
OperandLayout dense_layout(const std::vector<int64_t>& dims, DType dtype);

/// Everything that identifies a matmul primitive: dst (+)= src·weights (+ bias).
struct MatmulKey {
  OperandLayout src;        // [..., M, K]
  OperandLayout weights;    // [..., K, N]
  OperandLayout bias;       // [1, ..., 1, N]; dims empty when there is no bias
  OperandLayout dst;        // [..., M, N]
  bool accumulate = false;  // dst += product (oneDNN sum post-op) instead of dst = product
  bool operator==(const MatmulKey&) const = default;
};

/// A created primitive with the memory descriptors it was made for.
struct MatmulPrimitive {
  dnnl::matmul primitive;
  dnnl::memory::desc src;
  dnnl::memory::desc weights;
  dnnl::memory::desc bias;
  dnnl::memory::desc dst;
  /// oneDNN found only its reference implementation (slow); callers with strided operands
  /// should retry with dense copies.
  bool is_reference = false;
};

/// The primitive for `key`: from the cache, or created and cached on first use. Thread-safe;
/// the returned pointer stays valid even if the cache is cleared meanwhile.
std::shared_ptr<const MatmulPrimitive> matmul_primitive(const MatmulKey& key);

/// Runs `primitive` on raw element pointers (bias null when the key has none) on the calling
/// thread's stream and waits for it. The product itself runs on oneDNN's OpenMP threads.
void execute_matmul(const MatmulPrimitive& primitive, const void* src, const void* weights,
                    const void* bias, void* dst);

/// Whether oneDNN has a bf16 matmul on this CPU. oneDNN 2.x has none below AVX-512 (an AVX2-only
/// CPU, or DNNL_MAX_CPU_ISA set lower): decided once, by creating a small bf16 primitive.
bool bf16_matmul_supported();

/// Number of cached primitives.
size_t matmul_cache_size();
/// Drops every cached primitive.
void clear_matmul_cache();

}  // namespace rota::backend::onednn
