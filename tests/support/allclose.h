// Tensor comparison assertions for GoogleTest (max abs/rel error, first bad index).
#pragma once

#include <gtest/gtest.h>

#include "framework/tensor/tensor.h"

namespace rota::testing {

/// Passes when |actual - expected| <= atol + rtol * |expected| everywhere and shapes match.
/// NaN never matches. The failure message names the worst element.
::testing::AssertionResult allclose(const Tensor& actual, const Tensor& expected,
                                    double rtol = 1e-5, double atol = 1e-8);

/// ‖actual − expected‖∞ / ‖expected‖∞ (the absolute difference when expected is all zeros): one
/// error figure for comparing a fast kernel's f32 result with a reference. Elements are compared
/// in order (shapes may differ, e.g. [B, N, F] vs a flat [B·N, F] reference); a different
/// element count adds a test failure.
double max_relative_error(const Tensor& actual, const Tensor& expected);

}  // namespace rota::testing
