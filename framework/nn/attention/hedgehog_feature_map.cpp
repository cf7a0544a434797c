// Hedgehog's learnable feature map (see hedgehog_feature_map.h).
#include "framework/nn/attention/hedgehog_feature_map.h"

#include <vector>

#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"
#include "framework/base/error.h"

namespace rota::nn {

HedgehogFeatureMap::HedgehogFeatureMap(int64_t heads, int64_t head_dim, DType dtype)
    : heads_(heads), head_dim_(head_dim) {
  ROTA_CHECK(heads >= 1 && head_dim >= 1, "Hedgehog feature map: {} heads of {} dims", heads,
             head_dim);
  // W_h = I for every head: at initialisation φ(x) = [softmax(x), softmax(−x)].
  std::vector<double> identity(heads * head_dim * head_dim, 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t d = 0; d < head_dim; ++d) identity[(h * head_dim + d) * head_dim + d] = 1.0;
  }
  weight_ = register_parameter("weight", tensor_from(identity, {heads, head_dim, head_dim}, dtype));
  bias_ = register_parameter("bias", zeros({heads, head_dim}, dtype));
}

Variable HedgehogFeatureMap::forward(const Variable& x) const {
  ROTA_CHECK(x.dim() == 4 && x.size(1) == heads_ && x.size(3) == head_dim_,
             "Hedgehog feature map: input {} is not [B, {}, N, {}]", shape_str(x.shape()), heads_,
             head_dim_);
  // z = x W_h + b_h: [B, H, N, D] · [H, D, D] (broadcast over B) + [1, H, 1, D].
  const Variable z = matmul(x, weight_) + reshape(bias_, {1, heads_, 1, head_dim_});
  return concat({softmax(z, -1), softmax(neg(z), -1)}, -1);  // [B, H, N, 2D]
}

}  // namespace rota::nn
