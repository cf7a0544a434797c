// Feature maps of linear attention.
#include "framework/nn/attention/feature_map.h"

#include "framework/autograd/ops/elementwise.h"

namespace rota::nn {

FeatureMap parse_feature_map(const std::string& name) {
  if (name == "1+elu" || name == "one_plus_elu") return FeatureMap::kOnePlusElu;
  if (name == "relu") return FeatureMap::kRelu;
  if (name == "silu") return FeatureMap::kSilu;
  if (name == "identity") return FeatureMap::kIdentity;
  if (name == "exp") return FeatureMap::kExp;
  if (name == "hedgehog") return FeatureMap::kHedgehog;
  fail("feature map: unknown name '{}' (expected 1+elu, relu, silu, identity, exp or hedgehog)",
       name);
}

const char* feature_map_name(FeatureMap map) {
  switch (map) {
    case FeatureMap::kOnePlusElu:
      return "1+elu";
    case FeatureMap::kRelu:
      return "relu";
    case FeatureMap::kSilu:
      return "silu";
    case FeatureMap::kIdentity:
      return "identity";
    case FeatureMap::kExp:
      return "exp";
    case FeatureMap::kHedgehog:
      return "hedgehog";
  }
  return "?";
}

bool feature_map_is_nonnegative(FeatureMap map) {
  return map == FeatureMap::kOnePlusElu || map == FeatureMap::kRelu || map == FeatureMap::kExp ||
         map == FeatureMap::kHedgehog;
}

Variable apply_feature_map(FeatureMap map, const Variable& x) {
  switch (map) {
    case FeatureMap::kOnePlusElu:
      return one_plus_elu(x);
    case FeatureMap::kRelu:
      return relu(x);
    case FeatureMap::kSilu:
      return silu(x);
    case FeatureMap::kIdentity:
      return x;
    case FeatureMap::kExp:
      return exp(x);
    case FeatureMap::kHedgehog:
      break;
  }
  fail("feature map '{}' has parameters: LinearAttention applies it", feature_map_name(map));
}

}  // namespace rota::nn
