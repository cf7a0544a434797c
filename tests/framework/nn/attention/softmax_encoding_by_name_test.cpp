// Every softmax-attention encoding is selectable by name and runs in the layer.
#include <string>

#include <gtest/gtest.h>

#include "framework/nn/attention/softmax_encoding_by_name.h"

namespace rota {
namespace {

TEST(SoftmaxEncodingByName, EveryNameBuildsAWorkingLayer) {
  Generator gen(1);
  const Tensor x = randn({2, 5, 8}, gen, 0, 1, DType::kF64);
  for (const char* name : {"none", "sinusoidal", "learned", "rope", "rope_half", "alibi", "t5",
                           "shaw", "transformer_xl", "skew"}) {
    for (bool causal : {true, false}) {
      nn::SoftmaxEncodingParams params;
      params.heads = 2;
      params.head_dim = 4;
      params.causal = causal;
      params.skew_max_len = 16;
      params.dtype = DType::kF64;
      nn::SoftmaxAttentionOptions o;
      o.dim = 8;
      o.heads = 2;
      o.causal = causal;
      o.dtype = DType::kF64;
      o.encoding = nn::softmax_encoding_by_name(name, params, gen);
      nn::SoftmaxAttention layer(o, gen);
      const Variable y = layer.forward(Variable(x));
      EXPECT_EQ(y.shape(), (Shape{2, 5, 8})) << name;
      const bool custom = std::string(name) == "shaw" || std::string(name) == "transformer_xl" ||
                          std::string(name) == "skew";
      EXPECT_EQ(o.encoding.kind == nn::SoftmaxEncodingKind::kCustom, custom) << name;
      if (std::string(name) == "t5") EXPECT_EQ(*o.encoding.t5_bidirectional, !causal);
    }
  }
}

TEST(SoftmaxEncodingByName, UnknownNameListsTheValidOnes) {
  Generator gen(2);
  try {
    nn::softmax_encoding_by_name("lrpe", nn::SoftmaxEncodingParams{}, gen);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown encoding 'lrpe'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("transformer_xl"), std::string::npos);
  }
}

}  // namespace
}  // namespace rota
