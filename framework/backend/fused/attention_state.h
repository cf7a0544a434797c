// The carried states of the causal attention kernels (S₀ in, S_N out, and their gradients):
// shape, operand check and each slice's block.
#pragma once

#include <cstdint>
#include <type_traits>

#include "framework/tensor/tensor.h"

namespace rota::backend {

/// The state of the slices of q [..., N, F] with values [..., N, D]: [..., F, D].
Shape attention_state_shape(const Tensor& q, const Tensor& v);

/// An optional state operand of kernel `op` (`what`: "initial state", "final state's gradient"):
/// undefined stays undefined; otherwise it must be [..., F, D] of q's dtype, and is returned
/// dense (slice g's block at g·F·D).
Tensor dense_attention_state(const char* op, const char* what, const Tensor& state, const Tensor& q,
                             const Tensor& v);

/// Slice g's [F, D] block of a dense state, or null for an undefined one.
template <typename T>
T* attention_state_slice(const Tensor& state, int64_t f, int64_t d, int64_t g) {
  return state.defined() ? state.data<std::remove_const_t<T>>() + g * f * d : nullptr;
}

}  // namespace rota::backend
