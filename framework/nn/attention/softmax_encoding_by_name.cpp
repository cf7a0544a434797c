// Name → softmax-attention encoding.
#include "framework/nn/attention/softmax_encoding_by_name.h"

#include "framework/nn/position/shaw.h"
#include "framework/nn/position/skew.h"

namespace rota::nn {

SoftmaxEncodingOptions softmax_encoding_by_name(const std::string& name,
                                                const SoftmaxEncodingParams& p, Generator& gen) {
  SoftmaxEncodingOptions o;
  if (name == "sinusoidal" || name == "learned") return o;  // kNone: the model adds them
  if (name == "shaw") {
    ShawOptions s;
    s.head_dim = p.head_dim;
    s.clip = p.shaw_clip;
    s.values = p.shaw_values;
    s.dtype = p.dtype;
    o.kind = SoftmaxEncodingKind::kCustom;
    o.custom = std::make_shared<ShawRelativeEncoding>(s, gen);
    return o;
  }
  if (name == "transformer_xl" || name == "xl") {
    RelativeXlOptions x;
    x.heads = p.heads;
    x.head_dim = p.head_dim;
    x.pe_dim = p.xl_pe_dim;
    x.layout = p.xl_layout;
    x.dtype = p.dtype;
    o.kind = SoftmaxEncodingKind::kCustom;
    o.custom = std::make_shared<RelativeXlEncoding>(x, gen);
    return o;
  }
  if (name == "skew") {
    SkewOptions s;
    s.head_dim = p.head_dim;
    s.max_len = p.skew_max_len;
    s.heads = p.heads;
    s.per_head = p.skew_per_head;
    s.dtype = p.dtype;
    o.kind = SoftmaxEncodingKind::kCustom;
    o.custom = std::make_shared<SkewRelativeEncoding>(s, gen);
    return o;
  }
  try {
    o = parse_softmax_encoding(name);
  } catch (const Error&) {
    fail(
        "softmax attention: unknown encoding '{}' (expected none, sinusoidal, learned, rope, "
        "rope_half, alibi, t5, shaw, transformer_xl or skew)",
        name);
  }
  o.rope_base = p.rope_base;
  o.t5_num_buckets = p.t5_buckets;
  o.t5_max_distance = p.t5_max_distance;
  if (!o.t5_bidirectional) o.t5_bidirectional = !p.causal;
  return o;
}

}  // namespace rota::nn
