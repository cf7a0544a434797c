// Feature maps φ of linear attention, selectable by name.
#pragma once

#include <string>

#include "framework/autograd/variable.h"

namespace rota::nn {

enum class FeatureMap {
  kOnePlusElu,  // 1 + elu(x): strictly positive (default)
  kRelu,        // non-negative
  kSilu,        // signed
  kIdentity,    // signed
  kExp,         // strictly positive
  kHedgehog,    // learnable, non-negative, 2D wide: HedgehogFeatureMap (LinearAttention owns it)
};

/// Parses "1+elu" (or "one_plus_elu"), "relu", "silu", "identity", "exp", "hedgehog".
FeatureMap parse_feature_map(const std::string& name);
const char* feature_map_name(FeatureMap map);
/// True when φ(x) >= 0 for every x (required by the classic denominator).
bool feature_map_is_nonnegative(FeatureMap map);
/// The parameter-free maps; kHedgehog has parameters (HedgehogFeatureMap) and is refused here.
Variable apply_feature_map(FeatureMap map, const Variable& x);

}  // namespace rota::nn
