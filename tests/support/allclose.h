// Tensor comparison assertions for GoogleTest (max abs/rel error, first bad index).
#pragma once

#include <gtest/gtest.h>

#include "framework/tensor/tensor.h"

namespace rota::testing {

/// Passes when |actual - expected| <= atol + rtol * |expected| everywhere and shapes match.
/// NaN never matches. The failure message names the worst element.
::testing::AssertionResult allclose(const Tensor& actual, const Tensor& expected,
                                    double rtol = 1e-5, double atol = 1e-8);

}  // namespace rota::testing
