// Fused-op tests: a fused op's output and gradients against the same ops composed, for each
// activation and each bf16 matmul path.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "framework/backend/primitives/elementwise.h"
#include "framework/tensor/tensor.h"

namespace rota::testing {

/// The activations the fused linear ops take.
inline constexpr backend::UnaryOp kFusedActivations[] = {
    backend::UnaryOp::kRelu, backend::UnaryOp::kGeluErf, backend::UnaryOp::kGeluTanh,
    backend::UnaryOp::kSilu};

/// Compares parallel lists of results (the output, then gradients) of the fused op and of the
/// composed ops, labelled by `names`: an entry is defined in both or in neither, has the same
/// shape, and agrees to 1e-13 in f64 and bit for bit otherwise. Failures name `what`.
void expect_same_results(const std::vector<Tensor>& fused, const std::vector<Tensor>& composed,
                         const std::vector<std::string>& names, DType dtype,
                         const std::string& what);

/// Runs f under bf16 matmul precision twice, on the native path and on the portable
/// (emulated) one, with the label "bf16 " or "bf16 portable "; restores both settings after.
void for_each_bf16_matmul_path(const std::function<void(const std::string& label)>& f);

}  // namespace rota::testing
