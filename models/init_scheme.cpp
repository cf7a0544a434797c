// The initialisation schemes of init_scheme.h as per-parameter distributions.
#include "models/init_scheme.h"

#include <cmath>

#include "framework/base/error.h"
#include "models/model_options.h"

namespace rota::models {

ParameterInits parameter_inits(const ModelOptions& o) {
  using nn::WeightInit;
  ParameterInits p;
  const double inverse_sqrt_width = 1.0 / std::sqrt(static_cast<double>(o.dim));
  switch (o.init_scheme) {
    case InitScheme::kNormal:
    case InitScheme::kGpt2: {
      ROTA_CHECK(o.init_std > 0, "model: init_std must be > 0, got {}", o.init_std);
      const WeightInit normal = WeightInit::normal(o.init_std);
      const WeightInit residual =
          o.init_scheme == InitScheme::kGpt2
              ? WeightInit::normal(o.init_std / std::sqrt(2.0 * static_cast<double>(o.layers)))
              : normal;
      p = {normal, residual, normal, residual, normal, normal, o.init_std};
      break;
    }
    case InitScheme::kWidthScaled: {
      const WeightInit fan_in = WeightInit::normal_fan_in();
      p = {fan_in, fan_in, fan_in, fan_in, fan_in, fan_in, inverse_sqrt_width};
      break;
    }
    case InitScheme::kPyTorch: {
      const WeightInit pytorch = WeightInit::pytorch();
      p = {pytorch, pytorch, pytorch, pytorch, pytorch, pytorch, inverse_sqrt_width};
      break;
    }
    case InitScheme::kFairseq:
      p.attention_input = WeightInit::xavier_uniform(1.0 / std::sqrt(2.0), /*pytorch_bias=*/true);
      p.attention_output = WeightInit::xavier_uniform(1.0, /*pytorch_bias=*/false);
      p.ffn_first = WeightInit::pytorch();
      p.ffn_second = WeightInit::pytorch();
      p.lm_head = WeightInit::normal(inverse_sqrt_width);
      p.classifier_head = WeightInit::pytorch();
      p.embedding_std = inverse_sqrt_width;
      break;
  }
  return p;
}

const char* init_scheme_name(InitScheme scheme) {
  switch (scheme) {
    case InitScheme::kNormal:
      return "normal";
    case InitScheme::kGpt2:
      return "gpt2";
    case InitScheme::kWidthScaled:
      return "width_scaled";
    case InitScheme::kPyTorch:
      return "pytorch";
    case InitScheme::kFairseq:
      return "fairseq";
  }
  return "?";
}

}  // namespace rota::models
