// Gradients (f64, finite differences) of the Shaw / Transformer-XL / skew encodings and the
// streaming chunk layer: q, k, v and every encoding parameter, causal and not, cross, offsets.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/attention/streaming_chunk_attention.h"
#include "framework/nn/position/relative_xl.h"
#include "framework/nn/position/shaw.h"
#include "framework/nn/position/skew.h"
#include "framework/tensor/random.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using nn::AttentionCall;
using testing::gradcheck_variables;

struct Geometry {
  std::string name;
  int64_t batch, heads, n_q, n_k, head_dim, offset;
  bool causal;
  bool masks;  // visibility pattern and key padding
};

std::vector<Geometry> geometries() {
  return {
      {"self_causal", 1, 2, 5, 5, 3, 0, true, false},
      {"self_full_masked", 2, 2, 4, 4, 3, 0, false, true},
      {"cross_end_causal", 1, 2, 3, 6, 3, 3, true, false},
      {"cross_start", 2, 2, 3, 5, 3, 0, false, false},
  };
}

AttentionCall make_call(const Geometry& g) {
  AttentionCall call;
  call.scale = 1.0 / std::sqrt(static_cast<double>(g.head_dim));
  call.causal = g.causal;
  call.query_offset = g.offset;
  if (g.masks) {
    Tensor vis = ones({g.n_q, g.n_k});
    vis.set({0, g.n_k - 1}, 0.0);
    vis.set({g.n_q - 1, 0}, 0.0);
    call.visibility_mask = vis;
    Tensor pad = ones({g.batch, g.n_k});
    pad.set({g.batch - 1, g.n_k - 1}, 0.0);
    call.key_padding_mask = pad;
  }
  return call;
}

enum class Kind { kShaw, kShawValues, kXl, kXlConcat, kSkew, kSkewPerHead };

struct Case {
  Kind kind;
  Geometry g;
};

std::string case_name(const Case& c) {
  const char* names[] = {"Shaw", "ShawValues", "Xl", "XlConcat", "Skew", "SkewPerHead"};
  return std::string(names[static_cast<int>(c.kind)]) + "_" + c.g.name;
}

std::shared_ptr<nn::RelativeAttentionEncoding> make_encoding(const Case& c, Generator& gen) {
  switch (c.kind) {
    case Kind::kShaw:
    case Kind::kShawValues: {
      nn::ShawOptions o;
      o.head_dim = c.g.head_dim;
      o.clip = 2;  // every geometry reaches past the clip
      o.values = c.kind == Kind::kShawValues;
      o.dtype = DType::kF64;
      return std::make_shared<nn::ShawRelativeEncoding>(o, gen);
    }
    case Kind::kXl:
    case Kind::kXlConcat: {
      nn::RelativeXlOptions o;
      o.heads = c.g.heads;
      o.head_dim = c.g.head_dim;
      if (c.kind == Kind::kXlConcat) {
        o.layout = nn::SinusoidLayout::kConcatenated;
        o.pe_dim = 4;
      }
      o.dtype = DType::kF64;
      return std::make_shared<nn::RelativeXlEncoding>(o, gen);
    }
    case Kind::kSkew:
    case Kind::kSkewPerHead: {
      nn::SkewOptions o;
      o.head_dim = c.g.head_dim;
      o.max_len = 10;
      o.heads = c.g.heads;
      o.per_head = c.kind == Kind::kSkewPerHead;
      o.dtype = DType::kF64;
      return std::make_shared<nn::SkewRelativeEncoding>(o, gen);
    }
  }
  return nullptr;
}

class RelativeEncodingGrad : public ::testing::TestWithParam<Case> {};

TEST_P(RelativeEncodingGrad, QueriesKeysValuesAndParameters) {
  const Case& c = GetParam();
  const Geometry& g = c.g;
  Generator gen(31);
  const auto enc = make_encoding(c, gen);
  Variable q(randn({g.batch, g.heads, g.n_q, g.head_dim}, gen, 0, 1, DType::kF64), true);
  Variable k(randn({g.batch, g.heads, g.n_k, g.head_dim}, gen, 0, 1, DType::kF64), true);
  Variable v(randn({g.batch, g.heads, g.n_k, g.head_dim}, gen, 0, 1, DType::kF64), true);
  std::vector<Variable> leaves = {q, k, v};
  std::vector<std::string> names = {"q", "k", "v"};
  for (const auto& [name, p] : enc->named_parameters()) {
    // Larger tables than the init so the positional terms matter in the check.
    Tensor(p.data()).copy_from(randn(p.shape(), gen, 0.0, 0.7, DType::kF64));
    leaves.push_back(p);
    names.push_back(name);
  }
  const AttentionCall call = make_call(g);
  const auto result = gradcheck_variables([&] { return enc->attend(q, k, v, call); }, leaves);
  std::string list;
  for (const auto& n : names) list += n + " ";
  EXPECT_TRUE(result) << "leaves: " << list;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Kind kind : {Kind::kShaw, Kind::kShawValues, Kind::kXl, Kind::kXlConcat, Kind::kSkew,
                    Kind::kSkewPerHead})
    for (const Geometry& g : geometries()) out.push_back({kind, g});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cases, RelativeEncodingGrad, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return case_name(info.param);
                         });

TEST(ShawComposedGrad, KeysOnlyComposedPath) {
  // The composed path (the reference for the fused one) has its own gradient.
  Generator gen(5);
  nn::ShawOptions o;
  o.head_dim = 3;
  o.clip = 1;
  o.dtype = DType::kF64;
  const nn::ShawRelativeEncoding shaw(o, gen);
  const Geometry g{"cross", 2, 2, 3, 5, 3, 2, true, true};
  Variable q(randn({2, 2, 3, 3}, gen, 0, 1, DType::kF64), true);
  Variable k(randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64), true);
  Variable v(randn({2, 2, 5, 3}, gen, 0, 1, DType::kF64), true);
  const AttentionCall call = make_call(g);
  EXPECT_TRUE(gradcheck_variables([&] { return shaw.attend_composed(q, k, v, call); },
                                  {q, k, v, shaw.key_table()}));
}

TEST(StreamingChunkAttentionGrad, FullFormInputAndEveryParameter) {
  Generator gen(7);
  nn::StreamingChunkAttentionOptions o;
  o.dim = 4;
  o.heads = 2;
  o.chunk_size = 2;
  o.memory = 2;
  o.dtype = DType::kF64;
  nn::StreamingChunkAttention layer(o, gen);
  Variable x(randn({1, 5, 4}, gen, 0, 1, DType::kF64), true);
  std::vector<Variable> leaves = {x};
  for (const auto& p : layer.parameters()) leaves.push_back(p);
  EXPECT_TRUE(gradcheck_variables([&] { return layer.forward(x); }, leaves));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
