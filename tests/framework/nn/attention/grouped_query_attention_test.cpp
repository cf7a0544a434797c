// Grouped-query softmax attention: equal to multi-head attention with repeated key/value weights.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/nn/attention/softmax_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/gradcheck.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::gradcheck_variables;

constexpr int64_t kDim = 16, kHeads = 4, kHeadDim = kDim / kHeads;

nn::PositionEncoding encoding_named(const std::string& name) {
  if (name == "none") return nn::NoPosition{};
  if (name == "rope_half") return nn::RopePosition{backend::LrpePairing::kHalf, 500.0};
  if (name == "alibi") return nn::AlibiPosition{};
  throw Error("unknown test encoding '" + name + "'");
}

nn::SoftmaxAttentionOptions options(const std::string& encoding, bool causal, int64_t kv_heads) {
  nn::SoftmaxAttentionOptions o;
  o.dim = kDim;
  o.heads = kHeads;
  o.kv_heads = kv_heads;
  o.causal = causal;
  o.position = encoding_named(encoding);
  o.dtype = DType::kF64;
  return o;
}

/// The multi-head weights that compute what `gqa` computes: k and v rows of key/value head
/// ⌊h·H_kv/H⌋ copied to query head h (written out per row, not by the layer's own reshape).
StateDict repeated_for_multi_head(const nn::SoftmaxAttention& gqa) {
  const int64_t group = kHeads / gqa.kv_heads();
  StateDict out;
  for (const auto& [name, tensor] : gqa.state_dict()) {
    const bool kv = name.rfind("k_proj.", 0) == 0 || name.rfind("v_proj.", 0) == 0;
    if (!kv) {
      out.insert(name, tensor);
      continue;
    }
    const std::vector<double> src = tensor.to_double_vector();
    const int64_t cols = tensor.dim() == 2 ? tensor.size(1) : 1;
    std::vector<double> dst;
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t source_head = h / group;
      for (int64_t r = 0; r < kHeadDim; ++r) {
        const int64_t row = source_head * kHeadDim + r;
        dst.insert(dst.end(), src.begin() + row * cols, src.begin() + (row + 1) * cols);
      }
    }
    out.insert(name,
               tensor_from(dst, tensor.dim() == 2 ? Shape{kDim, cols} : Shape{kDim}, DType::kF64));
  }
  return out;
}

class GroupedQuery : public ::testing::TestWithParam<std::string> {};

TEST_P(GroupedQuery, EqualsMultiHeadAttentionWithRepeatedKeyValueWeights) {
  for (int64_t kv_heads : {1, 2}) {
    for (bool causal : {true, false}) {
      Generator g1(3), g2(4), data(5);
      nn::SoftmaxAttention gqa(options(GetParam(), causal, kv_heads), g1);
      EXPECT_EQ(gqa.named_parameters()[2].second.data().shape(),
                (Shape{kv_heads * kHeadDim, kDim}));
      nn::SoftmaxAttention mha(options(GetParam(), causal, 0), g2);
      mha.load_state_dict(repeated_for_multi_head(gqa), /*strict=*/true);
      const Variable x(randn({2, 7, kDim}, data, 0, 1, DType::kF64));
      nn::SoftmaxAttentionInputs in;
      if (!causal)
        in.key_padding_mask =
            tensor_from(std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, {2, 7});
      EXPECT_TRUE(allclose(gqa.forward(x, in).data(), mha.forward(x, in).data(), 1e-13, 1e-13))
          << GetParam() << " kv_heads " << kv_heads << (causal ? " causal" : " full");
      // And the weights matter: a multi-head layer with its own k/v weights differs.
      Generator g3(4);
      nn::SoftmaxAttention other(options(GetParam(), causal, 0), g3);
      EXPECT_FALSE(allclose(gqa.forward(x, in).data(), other.forward(x, in).data(), 1e-3, 1e-3));
    }
  }
}

TEST_P(GroupedQuery, GradcheckParametersAndInput) {
  Generator gen(7);
  nn::SoftmaxAttentionOptions o = options(GetParam(), true, 2);
  o.output_bias = false;
  nn::SoftmaxAttention layer(o, gen);
  Variable x(randn({2, 5, kDim}, gen, 0, 1, DType::kF64), true);
  std::vector<Variable> leaves;
  for (const auto& [name, p] : layer.named_parameters())
    if (p.requires_grad()) leaves.push_back(p);
  leaves.push_back(x);
  EXPECT_TRUE(gradcheck_variables([&] { return layer.forward(x); }, leaves)) << GetParam();
}

TEST_P(GroupedQuery, StepsWithAKeyValueCacheOfKvHeadsGiveTheForwardRows) {
  for (int64_t window : {0, 3}) {
    Generator gen(9);
    nn::SoftmaxAttentionOptions o = options(GetParam(), true, 2);
    o.window = window;
    nn::SoftmaxAttention layer(o, gen);
    layer.eval();
    const Tensor x = randn({2, 6, kDim}, gen, 0, 1, DType::kF64);
    const Tensor full = layer.forward(Variable(x)).data();
    nn::SoftmaxAttentionCache cache;
    for (int64_t i = 0; i < 6; ++i) {
      const Tensor y = layer.step(x.slice(1, i, i + 1).contiguous().reshape({2, kDim}), cache);
      EXPECT_TRUE(
          allclose(y, full.slice(1, i, i + 1).contiguous().reshape({2, kDim}), 1e-12, 1e-12))
          << GetParam() << " window " << window << " step " << i;
      EXPECT_EQ(cache.k.size(1), 2);  // H_kv heads cached, not H
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, GroupedQuery, ::testing::Values("none", "rope_half", "alibi"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(GroupedQueryAttention, PerPartBiasesAndRefusals) {
  Generator gen(1);
  nn::SoftmaxAttentionOptions o = options("none", true, 2);
  o.qkv_bias = true;
  o.output_bias = false;
  nn::SoftmaxAttention layer(o, gen);
  std::vector<std::string> names;
  for (const auto& [name, p] : layer.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj.weight", "q_proj.bias", "k_proj.weight",
                                             "k_proj.bias", "v_proj.weight", "v_proj.bias",
                                             "out_proj.weight"}));
  nn::SoftmaxAttentionOptions bad = options("none", true, 3);  // 4 heads, 3 kv heads
  EXPECT_THROW(nn::SoftmaxAttention(bad, gen), Error);
  bad.kv_heads = -1;
  EXPECT_THROW(nn::SoftmaxAttention(bad, gen), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
