// Linear layer.
#include "framework/nn/linear.h"

#include <cmath>

#include "framework/autograd/ops/matmul.h"
#include "framework/autograd/ops/shape.h"
#include "framework/nn/init.h"

namespace rota::nn {

Linear::Linear(const LinearOptions& options, Generator& gen) : options_(options) {
  ROTA_CHECK(options.in_features > 0 && options.out_features > 0,
             "Linear: features must be positive, got in={} out={}", options.in_features,
             options.out_features);
  const double in = static_cast<double>(options.in_features);
  const double pytorch_bound = 1.0 / std::sqrt(in);
  const WeightInit& init = options.init;
  Tensor w = Tensor::empty({options.out_features, options.in_features}, options.dtype);
  switch (init.kind) {
    case WeightInit::Kind::kPyTorch:
      init::uniform_(w, gen, -pytorch_bound, pytorch_bound);
      break;
    case WeightInit::Kind::kNormal:
      ROTA_CHECK(init.scale > 0, "Linear: a normal init needs a std > 0, got {}", init.scale);
      init::normal_(w, gen, 0.0, init.scale);
      break;
    case WeightInit::Kind::kNormalFanIn:
      ROTA_CHECK(init.scale > 0, "Linear: a fan-in normal init needs a factor > 0, got {}",
                 init.scale);
      init::normal_(w, gen, 0.0, init.scale / std::sqrt(in));
      break;
    case WeightInit::Kind::kXavierUniform:
      init::xavier_uniform_(w, gen, init.scale);
      break;
  }
  weight_ = register_parameter("weight", w);
  if (options.bias) {
    Tensor b = Tensor::empty({options.out_features}, options.dtype);
    const bool uniform_bias = init.kind == WeightInit::Kind::kPyTorch ||
                              (init.kind == WeightInit::Kind::kXavierUniform && init.pytorch_bias);
    if (uniform_bias) {
      init::uniform_(b, gen, -pytorch_bound, pytorch_bound);
    } else {
      init::zeros_(b);
    }
    bias_ = register_parameter("bias", b);
  }
}

Variable Linear::forward(const Variable& x) const {
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == options_.in_features,
             "Linear: input {} does not end in in_features = {}", shape_str(x.shape()),
             options_.in_features);
  return linear(x, weight_, bias_);
}

std::vector<Variable> forward_shared_input(const std::vector<const Linear*>& layers,
                                           const Variable& x) {
  ROTA_CHECK(!layers.empty(), "forward_shared_input: no layers");
  if (layers.size() == 1) return {layers[0]->forward(x)};
  const LinearOptions& first = layers[0]->options();
  std::vector<Variable> weights, biases;
  std::vector<int64_t> widths;
  for (const Linear* layer : layers) {
    ROTA_CHECK(
        layer->options().in_features == first.in_features && layer->options().bias == first.bias,
        "forward_shared_input: layers differ in in_features ({} vs {}) or bias",
        layer->options().in_features, first.in_features);
    weights.push_back(layer->weight());
    if (first.bias) biases.push_back(layer->bias());
    widths.push_back(layer->options().out_features);
  }
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == first.in_features,
             "Linear: input {} does not end in in_features = {}", shape_str(x.shape()),
             first.in_features);
  // The stacked weight [ΣOut, In] is a small copy per call; its gradient is split back.
  const Variable y = linear(x, concat(weights, 0), first.bias ? concat(biases, 0) : Variable());
  return split(y, widths, -1);
}

}  // namespace rota::nn
