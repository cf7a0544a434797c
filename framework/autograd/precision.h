// Process-wide compute precision of the matmul and linear ops (bf16 mixed precision,
// autocast-like).
#pragma once

#include <string>

#include "framework/backend/primitives/convert.h"
#include "framework/tensor/tensor.h"

namespace rota {

/// The precision the matmul and linear ops multiply f32 operands in. Only f32·f32 products are
/// affected: f64 (gradient checks) and explicit bf16 operands always run as given, and every
/// other op (attention kernels, LRPE, norms, losses, optimizers) stays f32.
enum class MatmulPrecision {
  /// f32 operands, f32 products: the default, bit-identical to having no setting at all.
  kF32,
  /// Both operands rounded to bf16 (round-to-nearest-even), products accumulated in f32 by
  /// oneDNN, f32 results; the backward products multiply the f32 gradient rounded to bf16 with
  /// the saved bf16 operands. Weights, gradients and optimizer state stay f32.
  kBF16,
};

/// True when a product of these operands computes in bf16: the setting is kBF16 and both are f32
/// (f64 gradient checks and explicit bf16 operands run as given).
bool product_in_bf16(const Tensor& a, const Tensor& b);

/// "f32" or "bf16".
const char* matmul_precision_name(MatmulPrecision precision);

/// The current setting (kF32 unless changed). Process-wide: ops on every thread see it.
MatmulPrecision matmul_precision();
void set_matmul_precision(MatmulPrecision precision);

/// Sets the precision for its lifetime and restores the previous one on destruction. Meant to
/// scope a whole run (a training job, an evaluation, a benchmark) on the thread that drives it;
/// guards on several threads at once would restore each other's settings out of order.
class MatmulPrecisionGuard {
 public:
  explicit MatmulPrecisionGuard(MatmulPrecision precision) : previous_(matmul_precision()) {
    set_matmul_precision(precision);
  }
  ~MatmulPrecisionGuard() { set_matmul_precision(previous_); }
  MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
  MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

 private:
  MatmulPrecision previous_;
};

/// True when oneDNN multiplies bf16 operands on this CPU. oneDNN 2.6 has bf16 matmul kernels
/// from AVX-512 (native with AVX512-BF16 or AMX, emulated in AVX-512 otherwise) and none below:
/// with AVX2 only (or DNNL_MAX_CPU_ISA=AVX2) it cannot create a bf16 primitive at all. Probed
/// once (backend::bf16_matmul_native: a plain bf16 product and one with an f32 bias, the two
/// kinds the ops use), and false while force_bf16_matmul_emulation is on.
bool bf16_matmul_native();

/// Test hook: true makes bf16_matmul_native() report false, so kBF16 products take the
/// portable path, and re-arms its one-time warning; false returns to the probe's answer.
void force_bf16_matmul_emulation(bool emulate);

/// An f32 operand of a kBF16 product, rounded to bf16: a bf16 tensor when bf16_matmul_native(),
/// otherwise an f32 tensor holding the same bf16-rounded values (the portable path: oneDNN
/// multiplies them in f32 with f32 accumulation, so the results match up to accumulation
/// order, at f32 speed). The portable path reports itself once per process through the
/// precision warning handler.
Tensor round_to_bf16_operand(const Tensor& t);

/// How a fused kernel should store a result that a product multiplies: unrounded when the
/// product is not in bf16 (bf16 false), else rounded as round_to_bf16_operand rounds (a bf16
/// tensor when bf16_matmul_native(), bf16 values in f32 on the portable path).
backend::Bf16Rounding bf16_operand_rounding(bool bf16);

/// Receives the one-time warning that kBF16 products run on the portable path. The default
/// handler writes "warning: <message>" to stderr; the CLI routes it to its log.
using PrecisionWarningHandler = void (*)(const std::string& message);
void set_precision_warning_handler(PrecisionWarningHandler handler);

}  // namespace rota
