// Branch-free f32 → bf16 rounding over arrays, threaded for tensors.
#include "framework/backend/convert.h"

#include <cstring>

#include "framework/backend/parallel.h"

namespace rota::backend {

void float_to_bf16_array(const float* src, BF16* dst, int64_t n) {
  static_assert(sizeof(BF16) == sizeof(uint16_t));
  uint16_t* out = reinterpret_cast<uint16_t*>(dst);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, src + i, sizeof(u));
    // Both results computed, one kept by mask (a `?:` over them would stay a branch).
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x40u;
    const uint32_t is_nan = 0u - static_cast<uint32_t>((u & 0x7fffffffu) > 0x7f800000u);
    out[i] = static_cast<uint16_t>((quiet_nan & is_nan) | (rounded & ~is_nan));
  }
}

Tensor to_bf16(const Tensor& t) {
  if (t.dtype() != DType::kF32 || !t.is_contiguous()) return t.to(DType::kBF16);
  Tensor out = Tensor::empty(t.shape(), DType::kBF16);
  const float* src = t.data<float>();
  BF16* dst = out.data<BF16>();
  parallel_for(t.numel(), 1, [&](int64_t begin, int64_t end) {
    float_to_bf16_array(src + begin, dst + begin, end - begin);
  });
  return out;
}

}  // namespace rota::backend
