// The process-wide matmul precision, the bf16 support probe and the portable bf16 path.
#include "framework/autograd/precision.h"

#include <atomic>
#include <cstdio>

#include "framework/backend/primitives/convert.h"
#include "framework/backend/primitives/matmul.h"

namespace rota {

namespace {

std::atomic<MatmulPrecision> g_precision{MatmulPrecision::kF32};
std::atomic<bool> g_force_emulation{false};
std::atomic<bool> g_emulation_reported{false};

void warn_to_stderr(const std::string& message) {
  std::fprintf(stderr, "warning: %s\n", message.c_str());
}

std::atomic<PrecisionWarningHandler> g_warning_handler{&warn_to_stderr};

}  // namespace

const char* matmul_precision_name(MatmulPrecision precision) {
  return precision == MatmulPrecision::kBF16 ? "bf16" : "f32";
}

MatmulPrecision matmul_precision() {
  return g_precision.load(std::memory_order_relaxed);
}

void set_matmul_precision(MatmulPrecision precision) {
  g_precision.store(precision, std::memory_order_relaxed);
}

bool bf16_matmul_native() {
  return backend::bf16_matmul_native() && !g_force_emulation.load(std::memory_order_relaxed);
}

void force_bf16_matmul_emulation(bool emulate) {
  g_force_emulation.store(emulate, std::memory_order_relaxed);
  if (emulate) g_emulation_reported.store(false);
}

bool product_in_bf16(const Tensor& a, const Tensor& b) {
  return matmul_precision() == MatmulPrecision::kBF16 && a.dtype() == DType::kF32 &&
         b.dtype() == DType::kF32;
}

Tensor round_to_bf16_operand(const Tensor& t) {
  ROTA_CHECK(t.dtype() == DType::kF32, "bf16 matmul: operand dtype {} (expected f32)",
             dtype_name(t.dtype()));
  if (bf16_matmul_native()) return backend::to_bf16(t);
  if (!g_emulation_reported.exchange(true)) {
    g_warning_handler.load()(
        "bf16 matmul: oneDNN has no bf16 kernel on this CPU (it needs AVX-512; "
        "DNNL_MAX_CPU_ISA may also limit it); bf16 products run on the portable path: operands "
        "rounded to bf16, multiplied in f32 with f32 accumulation (bf16 numerics, f32 speed)");
  }
  return backend::round_to_bf16_values(t);  // one pass: the bf16 values, kept in f32
}

backend::Bf16Rounding bf16_operand_rounding(bool bf16) {
  if (!bf16) return backend::Bf16Rounding::kNone;
  return bf16_matmul_native() ? backend::Bf16Rounding::kToBf16
                              : backend::Bf16Rounding::kToBf16Values;
}

void set_precision_warning_handler(PrecisionWarningHandler handler) {
  g_warning_handler.store(handler != nullptr ? handler : &warn_to_stderr);
}

}  // namespace rota
