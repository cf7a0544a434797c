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
  fail("feature map: unknown name '{}' (expected 1+elu, relu, silu, identity or exp)", name);
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
  }
  return "?";
}

bool feature_map_is_nonnegative(FeatureMap map) {
  return map == FeatureMap::kOnePlusElu || map == FeatureMap::kRelu || map == FeatureMap::kExp;
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
  }
  return x;
}

}  // namespace rota::nn
