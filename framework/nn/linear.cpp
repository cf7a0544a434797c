// Linear layer.
#include "framework/nn/linear.h"

#include <algorithm>
#include <cmath>

#include "framework/autograd/ops/elementwise.h"
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

void Linear::add_lora(const LoraOptions& options, Generator& init_gen,
                      std::shared_ptr<Generator> dropout_gen) {
  ROTA_CHECK(!has_lora(), "Linear: already has a low-rank adapter");
  const int64_t limit = std::min(options_.in_features, options_.out_features);
  ROTA_CHECK(options.rank >= 1 && options.rank <= limit,
             "LoRA: rank {} is outside [1, {}] (min(in, out) of a [{}, {}] layer; a full-rank "
             "adapter is no cheaper than training the layer)",
             options.rank, limit, options_.out_features, options_.in_features);
  ROTA_CHECK(options.alpha > 0 && std::isfinite(options.alpha), "LoRA: alpha must be > 0, got {}",
             options.alpha);
  ROTA_CHECK(options.dropout >= 0 && options.dropout < 1, "LoRA: dropout must be in [0, 1), got {}",
             options.dropout);
  ROTA_CHECK(options.dropout == 0 || dropout_gen != nullptr,
             "LoRA: dropout {} needs a dropout generator", options.dropout);
  lora_options_ = options;
  // A [r, in] ~ U(±1/√in): kaiming_uniform_(a = √5) on fan_in = in. B [out, r] = 0.
  const double bound = 1.0 / std::sqrt(static_cast<double>(options_.in_features));
  Tensor a = Tensor::empty({options.rank, options_.in_features}, weight_.dtype());
  init::uniform_(a, init_gen, -bound, bound);
  Tensor b = Tensor::empty({options_.out_features, options.rank}, weight_.dtype());
  init::zeros_(b);
  lora_a_ = register_parameter(kLoraA, a);
  lora_b_ = register_parameter(kLoraB, b);
  if (options.dropout > 0) {
    lora_dropout_ =
        register_module("lora_dropout", std::make_shared<Dropout>(options.dropout, dropout_gen));
  }
}

Variable Linear::lora_delta(const Variable& x) const {
  ROTA_CHECK(has_lora(), "Linear: no low-rank adapter");
  const Variable input = lora_dropout_ ? lora_dropout_->forward(x) : x;
  // [..., in] → [..., r] (scaled there, the narrowest point) → [..., out].
  return linear(mul_scalar(linear(input, lora_a_), lora_options_.scale()), lora_b_);
}

Variable Linear::forward(const Variable& x) const {
  ROTA_CHECK(x.dim() >= 1 && x.size(-1) == options_.in_features,
             "Linear: input {} does not end in in_features = {}", shape_str(x.shape()),
             options_.in_features);
  const Variable y = linear(x, weight_, bias_);
  return has_lora() ? y + lora_delta(x) : y;
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
  std::vector<Variable> outputs = split(y, widths, -1);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]->has_lora()) outputs[i] = outputs[i] + layers[i]->lora_delta(x);
  }
  return outputs;
}

}  // namespace rota::nn
