// Packed documents in the attention kernels (segment_ids, fused/document_ranges.h): plain causal
// and bidirectional outputs against the token definitions with attention and state kept inside
// each document; gated and delta-rule outputs against their reference forms run on each document
// alone; every gradient against central differences of the forward; bad segment ids refused.
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "framework/backend/fused/delta_rule_attention.h"
#include "framework/backend/fused/gated_linear_attention.h"
#include "framework/backend/fused/linear_attention.h"
#include "framework/tensor/random.h"
#include "tests/support/allclose.h"
#include "tests/support/expect_error.h"
#include "tests/support/tensor_factory.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using testing::allclose;
using testing::random_qkv;

// Segment ids [B, N] from each row's document lengths.
Tensor segment_ids_of(const std::vector<std::vector<int64_t>>& lengths, int64_t n) {
  std::vector<double> ids;
  for (const std::vector<int64_t>& row : lengths) {
    int64_t total = 0;
    for (size_t doc = 0; doc < row.size(); ++doc) {
      for (int64_t t = 0; t < row[doc]; ++t) ids.push_back(static_cast<double>(7 + 3 * doc));
      total += row[doc];
    }
    EXPECT_EQ(total, n);
  }
  return tensor_from(ids, {static_cast<int64_t>(lengths.size()), n}, DType::kI64);
}

struct Outputs {
  Tensor output;       // [B, H, N, D]
  Tensor final_state;  // [B, H, F, D]
};

// The causal definition token by token in double: S ← 0 where a document starts (S₀ before the
// row's first token), S ← γ_h S + k_tᵀ v_t, o_t = q_t S.
Outputs causal_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& ids,
                         const Tensor& initial, const std::vector<double>& gamma) {
  const int64_t batch = q.size(0), heads = q.size(1), n = q.size(2), f = q.size(3), d = v.size(3);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector(), doc = ids.to_double_vector();
  std::vector<double> state = initial.defined() ? initial.to_double_vector()
                                                : std::vector<double>(batch * heads * f * d, 0.0);
  std::vector<double> out(batch * heads * n * d, 0.0);
  for (int64_t g = 0; g < batch * heads; ++g) {
    const int64_t b = g / heads;
    const double gm = gamma.empty() ? 1.0 : gamma[g % heads];
    double* s = state.data() + g * f * d;
    for (int64_t t = 0; t < n; ++t) {
      const bool starts = t > 0 && doc[b * n + t] != doc[b * n + t - 1];
      for (int64_t x = 0; x < f * d; ++x) s[x] = starts ? 0.0 : gm * s[x];
      for (int64_t a = 0; a < f; ++a) {
        for (int64_t c = 0; c < d; ++c) {
          s[a * d + c] += kv[(g * n + t) * f + a] * vv[(g * n + t) * d + c];
        }
      }
      for (int64_t c = 0; c < d; ++c) {
        double o = 0.0;
        for (int64_t a = 0; a < f; ++a) o += qv[(g * n + t) * f + a] * s[a * d + c];
        out[(g * n + t) * d + c] = o;
      }
    }
  }
  return {tensor_from(out, v.shape(), DType::kF64),
          tensor_from(state, {batch, heads, f, d}, DType::kF64)};
}

// The bidirectional definition: o_i = Σ_{j in i's document, m_j = 1} (q_i·k_j) v_j.
Tensor bidirectional_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& ids,
                               const Tensor& mask) {
  const int64_t heads = q.size(1), n = q.size(2), f = q.size(3), d = v.size(3);
  const std::vector<double> qv = q.to_double_vector(), kv = k.to_double_vector(),
                            vv = v.to_double_vector(), doc = ids.to_double_vector();
  const std::vector<double> m =
      mask.defined() ? mask.to_double_vector() : std::vector<double>(q.size(0) * n, 1.0);
  std::vector<double> out(q.size(0) * heads * n * d, 0.0);
  for (int64_t g = 0; g < q.size(0) * heads; ++g) {
    const int64_t b = g / heads;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (doc[b * n + j] != doc[b * n + i] || m[b * n + j] == 0.0) continue;
        double score = 0.0;
        for (int64_t a = 0; a < f; ++a) score += qv[(g * n + i) * f + a] * kv[(g * n + j) * f + a];
        for (int64_t c = 0; c < d; ++c) out[(g * n + i) * d + c] += score * vv[(g * n + j) * d + c];
      }
    }
  }
  return tensor_from(out, v.shape(), DType::kF64);
}

Tensor decay_tensor(const std::vector<double>& gamma) {
  return gamma.empty() ? Tensor()
                       : tensor_from(gamma, {static_cast<int64_t>(gamma.size())}, DType::kF64);
}

// B = 2 rows of N = 13: documents that cut chunks of 4 in the middle, one-token documents, a row
// that is one document.
const std::vector<std::vector<int64_t>> kLayouts[] = {
    {{5, 1, 7}, {13}},
    {{1, 1, 4, 4, 3}, {2, 11}},
    {{13}, {6, 6, 1}},
};

TEST(PackedDocuments, CausalKernelKeepsAttentionAndStateInsideEachDocument) {
  Generator gen(21);
  const int64_t n = 13;
  for (const auto& layout : kLayouts) {
    const Tensor ids = segment_ids_of(layout, n);
    for (const std::vector<double>& gamma :
         {std::vector<double>{}, std::vector<double>{0.9, 0.6}}) {
      for (int64_t chunk : {1, 4, 64}) {
        for (bool with_state : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "layout " << layout[0].size() << " docs, chunk " << chunk << ", decay "
                       << !gamma.empty() << ", state " << with_state);
          const auto [q, k, v] = random_qkv(gen, 2, 2, n, 3, 4);
          const Tensor initial =
              with_state ? randn({2, 2, 3, 4}, gen, 0.0, 1.0, DType::kF64) : Tensor();
          const Outputs expected = causal_reference(q, k, v, ids, initial, gamma);
          Tensor final_state;
          const Tensor out = backend::causal_linear_attention_forward(
              q, k, v, chunk, decay_tensor(gamma), initial, &final_state, ids);
          EXPECT_TRUE(allclose(out, expected.output, 1e-12, 1e-12));
          EXPECT_TRUE(allclose(final_state, expected.final_state, 1e-12, 1e-12));
        }
      }
    }
  }
}

TEST(PackedDocuments, BidirectionalKernelAttendsOnlyInsideEachDocument) {
  Generator gen(22);
  const int64_t n = 13;
  Tensor mask = ones({2, n}, DType::kF32);
  mask.set({0, 12}, 0.0);
  mask.set({1, 3}, 0.0);
  for (const auto& layout : kLayouts) {
    const Tensor ids = segment_ids_of(layout, n);
    const auto [q, k, v] = random_qkv(gen, 2, 2, n, 3, 4);
    for (const Tensor& m : {Tensor(), mask}) {
      const Tensor out = backend::bidirectional_linear_attention_forward(q, k, v, m, ids);
      EXPECT_TRUE(allclose(out, bidirectional_reference(q, k, v, ids, m), 1e-12, 1e-12));
    }
  }
}

// L = Σ o ⊙ R (+ Σ S_N ⊙ R' causal): the kernels' gradients against central differences of
// their own forward, for every element of q, k, v (and S₀).
using Loss =
    std::function<double(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& initial)>;

void expect_central_differences(const Loss& loss, std::vector<Tensor> inputs,
                                const std::vector<Tensor>& grads) {
  const double eps = 1e-6;
  for (size_t which = 0; which < inputs.size(); ++which) {
    if (!inputs[which].defined()) continue;
    Tensor& x = inputs[which];
    const std::vector<double> analytic = grads[which].to_double_vector();
    for (int64_t e = 0; e < x.numel(); ++e) {
      double* at = x.data<double>() + e;
      const double keep = *at;
      *at = keep + eps;
      const double up = loss(inputs[0], inputs[1], inputs[2], inputs[3]);
      *at = keep - eps;
      const double down = loss(inputs[0], inputs[1], inputs[2], inputs[3]);
      *at = keep;
      const double numeric = (up - down) / (2 * eps);
      ASSERT_NEAR(analytic[e], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
          << "input " << which << " element " << e;
    }
  }
}

double weighted_sum(const Tensor& x, const Tensor& weights) {
  const std::vector<double> a = x.to_double_vector(), w = weights.to_double_vector();
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * w[i];
  return sum;
}

TEST(PackedDocuments, CausalGradientsMatchCentralDifferences) {
  Generator gen(23);
  const int64_t n = 9;
  const Tensor ids = segment_ids_of({{3, 1, 5}, {9}}, n);
  for (const std::vector<double>& gamma : {std::vector<double>{}, std::vector<double>{0.8, 0.5}}) {
    const auto [q, k, v] = random_qkv(gen, 2, 2, n, 2, 3);
    const Tensor initial = randn({2, 2, 2, 3}, gen, 0.0, 1.0, DType::kF64);
    const Tensor r = randn({2, 2, n, 3}, gen, 0.0, 1.0, DType::kF64);
    const Tensor r_final = randn({2, 2, 2, 3}, gen, 0.0, 1.0, DType::kF64);
    const Loss loss = [&](const Tensor& qx, const Tensor& kx, const Tensor& vx, const Tensor& s0) {
      Tensor final_state;
      const Tensor out = backend::causal_linear_attention_forward(
          qx, kx, vx, 4, decay_tensor(gamma), s0, &final_state, ids);
      return weighted_sum(out, r) + weighted_sum(final_state, r_final);
    };
    const backend::LinearAttentionGrads grads = backend::causal_linear_attention_backward(
        q, k, v, r, 4, decay_tensor(gamma), initial, r_final, ids);
    expect_central_differences(loss, {q.clone(), k.clone(), v.clone(), initial.clone()},
                               {grads.dq, grads.dk, grads.dv, grads.d_initial_state});
  }
}

TEST(PackedDocuments, BidirectionalGradientsMatchCentralDifferences) {
  Generator gen(24);
  const int64_t n = 9;
  const Tensor ids = segment_ids_of({{3, 1, 5}, {4, 5}}, n);
  Tensor mask = ones({2, n}, DType::kF32);
  mask.set({1, 2}, 0.0);
  const auto [q, k, v] = random_qkv(gen, 2, 2, n, 2, 3);
  const Tensor r = randn({2, 2, n, 3}, gen, 0.0, 1.0, DType::kF64);
  const Loss loss = [&](const Tensor& qx, const Tensor& kx, const Tensor& vx, const Tensor&) {
    return weighted_sum(backend::bidirectional_linear_attention_forward(qx, kx, vx, mask, ids), r);
  };
  const backend::LinearAttentionGrads grads =
      backend::bidirectional_linear_attention_backward(q, k, v, r, mask, ids);
  expect_central_differences(loss, {q.clone(), k.clone(), v.clone(), Tensor()},
                             {grads.dq, grads.dk, grads.dv, Tensor()});
}

// Rows [start, start + len) of x's dim 2 ([B, H, N, ...]) of batch row b, as [1, H, len, ...].
Tensor document_of(const Tensor& x, int64_t b, int64_t start, int64_t len) {
  return x.narrow(0, b, 1).narrow(2, start, len).contiguous();
}

// The documents of each row of a layout: (row, start, length).
std::vector<std::tuple<int64_t, int64_t, int64_t>> documents_of(
    const std::vector<std::vector<int64_t>>& layout) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> out;
  for (size_t b = 0; b < layout.size(); ++b) {
    int64_t start = 0;
    for (int64_t len : layout[b]) {
      out.emplace_back(static_cast<int64_t>(b), start, len);
      start += len;
    }
  }
  return out;
}

// Unit-norm keys (the delta rule's), gates and β for packed-document checks.
struct GatedInputs {
  Tensor q, k, v, log_gate, beta, scalar_gate;
};

GatedInputs gated_inputs(Generator& gen, int64_t n, bool per_channel) {
  GatedInputs in;
  in.q = randn({2, 2, n, 3}, gen, 0, 1, DType::kF64);
  in.k = testing::l2_normalise_rows(randn({2, 2, n, 3}, gen, 0, 1, DType::kF64));
  in.v = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  in.log_gate = rand({2, 2, n, per_channel ? 3 : 1}, gen, -1.5, 0.0, DType::kF64);
  in.beta = rand({2, 2, n}, gen, 0.05, 0.95, DType::kF64);
  in.scalar_gate = rand({2, 2, n}, gen, -1.5, 0.0, DType::kF64);
  return in;
}

// The gated kernel on packed rows equals the masked N×N reference run on each document alone;
// a carried state S₀ only reaches the first document (as the unpacked kernel would give it), and
// S_N is the last document's.
TEST(PackedDocuments, GatedKernelRunsEachDocumentAsItsOwnSequence) {
  Generator gen(26);
  const int64_t n = 13;
  for (const auto& layout : kLayouts) {
    const Tensor ids = segment_ids_of(layout, n);
    for (bool per_channel : {true, false}) {
      for (int64_t chunk : {4, 64}) {
        SCOPED_TRACE(::testing::Message() << layout[0].size() << " docs, per channel "
                                          << per_channel << ", chunk " << chunk);
        const GatedInputs in = gated_inputs(gen, n, per_channel);
        const Tensor packed = backend::gated_linear_attention_forward(
            in.q, in.k, in.v, in.log_gate, chunk, Tensor(), nullptr, ids);
        for (const auto& [b, start, len] : documents_of(layout)) {
          const Tensor expected = backend::gated_linear_attention_quadratic(
              document_of(in.q, b, start, len), document_of(in.k, b, start, len),
              document_of(in.v, b, start, len), document_of(in.log_gate, b, start, len));
          EXPECT_TRUE(allclose(document_of(packed, b, start, len), expected, 1e-11, 1e-11))
              << "row " << b << " document at " << start;
        }
        // With S₀: the first document as the unpacked kernel gives it, the others unchanged.
        const Tensor initial = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
        Tensor final_state;
        const Tensor with_state = backend::gated_linear_attention_forward(
            in.q, in.k, in.v, in.log_gate, chunk, initial, &final_state, ids);
        for (size_t b = 0; b < layout.size(); ++b) {
          const int64_t first = layout[b].front(), last = layout[b].back();
          const Tensor s0 = initial.narrow(0, static_cast<int64_t>(b), 1).contiguous();
          const Tensor alone = backend::gated_linear_attention_forward(
              document_of(in.q, b, 0, first), document_of(in.k, b, 0, first),
              document_of(in.v, b, 0, first), document_of(in.log_gate, b, 0, first), chunk, s0);
          EXPECT_TRUE(allclose(document_of(with_state, b, 0, first), alone, 1e-12, 1e-12));
          if (layout[b].size() > 1) {
            EXPECT_TRUE(allclose(document_of(with_state, b, first, n - first),
                                 document_of(packed, b, first, n - first), 0, 0));
          }
          Tensor last_state;
          (void)backend::gated_linear_attention_forward(
              document_of(in.q, b, n - last, last), document_of(in.k, b, n - last, last),
              document_of(in.v, b, n - last, last), document_of(in.log_gate, b, n - last, last),
              chunk, layout[b].size() == 1 ? s0 : Tensor(), &last_state);
          EXPECT_TRUE(allclose(final_state.narrow(0, static_cast<int64_t>(b), 1), last_state, 1e-12,
                               1e-12));
        }
      }
    }
  }
}

TEST(PackedDocuments, DeltaRuleKernelRunsEachDocumentAsItsOwnSequence) {
  Generator gen(27);
  const int64_t n = 13;
  for (const auto& layout : kLayouts) {
    const Tensor ids = segment_ids_of(layout, n);
    for (bool gated : {false, true}) {
      for (int64_t chunk : {4, 64}) {
        SCOPED_TRACE(::testing::Message()
                     << layout[0].size() << " docs, gated " << gated << ", chunk " << chunk);
        const GatedInputs in = gated_inputs(gen, n, false);
        const Tensor gate = gated ? in.scalar_gate : Tensor();
        const Tensor packed = backend::delta_rule_attention_forward(in.q, in.k, in.v, in.beta, gate,
                                                                    chunk, Tensor(), nullptr, ids);
        for (const auto& [b, start, len] : documents_of(layout)) {
          const Tensor doc_gate = gated ? document_of(gate, b, start, len) : Tensor();
          const Tensor expected = backend::delta_rule_attention_recurrent(
              document_of(in.q, b, start, len), document_of(in.k, b, start, len),
              document_of(in.v, b, start, len), document_of(in.beta, b, start, len), doc_gate);
          EXPECT_TRUE(allclose(document_of(packed, b, start, len), expected, 1e-11, 1e-11))
              << "row " << b << " document at " << start;
        }
      }
    }
  }
}

// Central differences through the gated and delta kernels with documents and a carried state:
// every input, gates and β included.
TEST(PackedDocuments, GatedAndDeltaGradientsMatchCentralDifferences) {
  Generator gen(28);
  const int64_t n = 9;
  const Tensor ids = segment_ids_of({{3, 1, 5}, {9}}, n);
  const GatedInputs in = gated_inputs(gen, n, true);
  const Tensor initial = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
  const Tensor r = randn({2, 2, n, 4}, gen, 0, 1, DType::kF64);
  const Tensor r_final = randn({2, 2, 3, 4}, gen, 0, 1, DType::kF64);
  const double eps = 1e-6;
  // f(inputs) for the central differences of input `which`, element e.
  const auto check = [&](const std::function<double(std::vector<Tensor>&)>& loss,
                         std::vector<Tensor> inputs, const std::vector<Tensor>& grads) {
    for (size_t which = 0; which < inputs.size(); ++which) {
      const std::vector<double> analytic = grads[which].to_double_vector();
      for (int64_t e = 0; e < inputs[which].numel(); ++e) {
        double* at = inputs[which].data<double>() + e;
        const double keep = *at;
        *at = keep + eps;
        const double up = loss(inputs);
        *at = keep - eps;
        const double down = loss(inputs);
        *at = keep;
        const double numeric = (up - down) / (2 * eps);
        ASSERT_NEAR(analytic[e], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
            << "input " << which << " element " << e;
      }
    }
  };
  {
    SCOPED_TRACE("gated");
    const auto loss = [&](std::vector<Tensor>& x) {
      Tensor final_state;
      const Tensor out = backend::gated_linear_attention_forward(x[0], x[1], x[2], x[3], 4, x[4],
                                                                 &final_state, ids);
      return weighted_sum(out, r) + weighted_sum(final_state, r_final);
    };
    const backend::GatedLinearAttentionGrads g = backend::gated_linear_attention_backward(
        in.q, in.k, in.v, in.log_gate, r, 4, initial, r_final, ids);
    check(loss, {in.q.clone(), in.k.clone(), in.v.clone(), in.log_gate.clone(), initial.clone()},
          {g.dq, g.dk, g.dv, g.dlog_gate, g.d_initial_state});
  }
  {
    SCOPED_TRACE("gated delta rule");
    const auto loss = [&](std::vector<Tensor>& x) {
      Tensor final_state;
      const Tensor out = backend::delta_rule_attention_forward(x[0], x[1], x[2], x[3], x[4], 4,
                                                               x[5], &final_state, ids);
      return weighted_sum(out, r) + weighted_sum(final_state, r_final);
    };
    const backend::DeltaRuleGrads g = backend::delta_rule_attention_backward(
        in.q, in.k, in.v, in.beta, in.scalar_gate, r, 4, initial, r_final, ids);
    check(loss,
          {in.q.clone(), in.k.clone(), in.v.clone(), in.beta.clone(), in.scalar_gate.clone(),
           initial.clone()},
          {g.dq, g.dk, g.dv, g.dbeta, g.dlog_gate, g.d_initial_state});
  }
}

TEST(PackedDocuments, BadSegmentIdsAreRefused) {
  Generator gen(25);
  const auto [q, k, v] = random_qkv(gen, 2, 2, 6, 3, 4);
  const auto forward = [&](const Tensor& ids) {
    return backend::causal_linear_attention_forward(q, k, v, 4, Tensor(), Tensor(), nullptr, ids);
  };
  const Tensor split = tensor_from({1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0}, {2, 6}, DType::kI64);
  testing::expect_error([&] { forward(split); },
                        "segment id 1 appears again at position 4 of row 0 after another "
                        "document");
  testing::expect_error(
      [&] {
        forward(zeros({2, 5}, DType::kI64));
      },
      "segment ids [2,5] do not fit sequences of 6");
  testing::expect_error(
      [&] {
        forward(zeros({2, 6}, DType::kF32));
      },
      "segment ids must be integers, got f32");
  testing::expect_error(
      [&] {
        forward(zeros({3, 6}, DType::kI64));
      },
      "segment ids for 3 rows do not divide the 4 slices");
  testing::expect_error(
      [&] { backend::bidirectional_linear_attention_forward(q, k, v, Tensor(), split); },
      "a document's tokens must be contiguous");
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
