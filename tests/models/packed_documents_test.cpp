// Packed documents (segment ids): every document of a packed row gets the losses, logits and
// gradients it gets alone, for every linear-attention encoding and every softmax encoding, in
// causal and masked LMs, with and without segments; absolute positions restart per document;
// and across windows that carry the state (packed lanes).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/base/error.h"
#include "framework/tensor/random.h"
#include "models/language_models.h"
#include "tests/models/model_variants.h"
#include "tests/support/allclose.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

using models::ModelOptions;
using models::testing::Variant;

// Rows of 13 tokens: documents that cut chunks of 4, a one-token document, and a document that
// starts exactly where a segment of 4 does (column 4 of row 1: the state the segment before
// hands on belongs to another document).
const std::vector<std::vector<int64_t>> kLayout = {{5, 1, 7}, {4, 9}};
constexpr int64_t kN = 13;

Tensor segment_ids() {
  std::vector<double> ids;
  for (const auto& row : kLayout) {
    for (size_t doc = 0; doc < row.size(); ++doc) {
      for (int64_t t = 0; t < row[doc]; ++t) ids.push_back(static_cast<double>(doc + 1));
    }
  }
  return tensor_from(ids, {2, kN}, DType::kI64);
}

// Columns [start, start + len) of row b: [1, len].
Tensor piece(const Tensor& x, int64_t b, int64_t start, int64_t len) {
  return x.narrow(0, b, 1).narrow(1, start, len).contiguous();
}

// Each parameter's gradient, by name.
std::vector<std::pair<std::string, Tensor>> gradients(const nn::Module& model) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, p] : model.named_parameters()) {
    out.emplace_back(name, p.grad().defined() ? p.grad().clone() : Tensor());
  }
  return out;
}

void expect_same_gradients(const std::vector<std::pair<std::string, Tensor>>& packed,
                           const std::vector<std::pair<std::string, Tensor>>& alone) {
  ASSERT_EQ(packed.size(), alone.size());
  for (size_t i = 0; i < packed.size(); ++i) {
    ASSERT_EQ(packed[i].second.defined(), alone[i].second.defined()) << packed[i].first;
    if (!alone[i].second.defined()) continue;
    EXPECT_TRUE(testing::allclose(packed[i].second, alone[i].second, 1e-10, 1e-10))
        << packed[i].first;
  }
}

// Causal LM: per-token losses of the packed rows against each document alone, and the gradients
// of the summed loss against the sum of the documents' summed losses.
void expect_causal_documents_alone(const ModelOptions& options) {
  Generator gen(41);
  const Tensor ids = randint({2, kN}, gen, 0, 17);
  const Tensor targets = randint({2, kN}, gen, 0, 17);
  const Tensor docs = segment_ids();
  Generator init(3);
  models::CausalLm model(options, init, std::make_shared<Generator>(5));
  model.eval();  // no dropout in the base options; eval keeps the tests about the masks
  const Tensor packed_losses = model.token_losses(ids, targets, 1024, nullptr, docs);
  model.zero_grad();
  (model.loss(ids, targets, docs) * static_cast<double>(2 * kN)).backward();
  const auto packed_grads = gradients(model);
  model.zero_grad();
  for (int64_t b = 0; b < 2; ++b) {
    int64_t start = 0;
    for (int64_t len : kLayout[b]) {
      const Tensor alone =
          model.token_losses(piece(ids, b, start, len), piece(targets, b, start, len));
      EXPECT_TRUE(testing::allclose(piece(packed_losses, b, start, len), alone, 1e-10, 1e-10))
          << "row " << b << " document at " << start;
      (model.loss(piece(ids, b, start, len), piece(targets, b, start, len)) *
       static_cast<double>(len))
          .backward();
      start += len;
    }
  }
  expect_same_gradients(packed_grads, gradients(model));
}

TEST(PackedDocuments, CausalLinearAttentionDocumentsAreThemselves) {
  for (const Variant& v : models::testing::variants(DType::kF64)) {
    SCOPED_TRACE(v.name);
    expect_causal_documents_alone(v.options);
    ModelOptions segmented = v.options;  // segments of 4 cut the documents
    segmented.segment_length = 4;
    SCOPED_TRACE("in segments of 4");
    expect_causal_documents_alone(segmented);
  }
}

TEST(PackedDocuments, CausalSoftmaxAttentionDocumentsAreThemselves) {
  for (const Variant& v : models::testing::softmax_variants(DType::kF64)) {
    SCOPED_TRACE(v.name);
    expect_causal_documents_alone(v.options);
  }
}

// Masked LM (bidirectional): logits of the packed rows against each document alone, with a
// padded tail in one row.
void expect_masked_documents_alone(const ModelOptions& options) {
  Generator gen(42);
  const Tensor ids = randint({2, kN}, gen, 0, 17);
  Tensor key_mask = ones({2, kN}, DType::kF32);
  key_mask.set({1, 12}, 0.0);  // the last token of row 1 is padding
  const Tensor docs = segment_ids();
  Generator init(3);
  models::MaskedLm model(options, init, std::make_shared<Generator>(5));
  model.eval();
  NoGradGuard no_grad;
  const Tensor packed = model.forward(ids, key_mask, docs).data();  // [2, N, V]
  for (int64_t b = 0; b < 2; ++b) {
    int64_t start = 0;
    for (int64_t len : kLayout[b]) {
      const Tensor alone =
          model.forward(piece(ids, b, start, len), piece(key_mask, b, start, len)).data();
      const Tensor rows = packed.narrow(0, b, 1).narrow(1, start, len).contiguous();
      EXPECT_TRUE(testing::allclose(rows, alone, 1e-10, 1e-10))
          << "row " << b << " document at " << start;
      start += len;
    }
  }
}

TEST(PackedDocuments, MaskedLmDocumentsAreThemselves) {
  std::vector<Variant> bidirectional;
  for (const Variant& v : models::testing::variants(DType::kF64)) {
    // The gated, delta-rule and decayed kernels are causal; the rest have bidirectional forms.
    if (v.name.rfind("LRPE type", 0) == 0 || v.name == "RoPE" || v.name == "PermuteFormer" ||
        v.name == "NoPE" || v.name == "sinusoidal absolute" || v.name == "denominator") {
      bidirectional.push_back(v);
    }
  }
  for (const Variant& v : models::testing::softmax_variants(DType::kF64))
    bidirectional.push_back(v);
  ASSERT_GE(bidirectional.size(), 15u);
  for (const Variant& v : bidirectional) {
    SCOPED_TRACE(v.name);
    expect_masked_documents_alone(v.options);
  }
}

// A mutation check of the position restart: absolute positions that did not restart would give
// the later documents other embeddings (the test above would fail); here, directly, a document
// at the end of a row equals the same document at the start of a row.
TEST(PackedDocuments, AbsolutePositionsRestartAtEachDocument) {
  ModelOptions o = models::testing::base(DType::kF64);
  o.position = nn::LearnedPosition{16};
  Generator gen(43);
  const Tensor doc = randint({1, 4}, gen, 0, 17);
  Tensor row = randint({1, 9}, gen, 0, 17);
  row.narrow(1, 5, 4).copy_from(doc);
  const Tensor ids = tensor_from({1, 1, 1, 1, 1, 2, 2, 2, 2}, {1, 9}, DType::kI64);
  Generator init(3);
  models::CausalLm model(o, init, std::make_shared<Generator>(5));
  model.eval();
  NoGradGuard no_grad;
  const Tensor packed = model.forward(row, ids).data().narrow(1, 5, 4).contiguous();
  EXPECT_TRUE(testing::allclose(packed, model.forward(doc).data(), 1e-12, 1e-12));
}

// Packed lanes (train.carry_state with packed documents): two rows of 21 tokens read as three
// windows of 7, the state carried from window to window. Row 0's first document ends exactly at
// the first window's end (the next window starts a new one from a zero state); row 1's second
// document runs across all three windows. Every token's loss equals its document's alone, and
// each window's continued loss is the mean of its tokens'.
const std::vector<std::vector<int64_t>> kLaneLayout = {{7, 9, 5}, {3, 15, 3}};
constexpr int64_t kLaneLength = 21;
constexpr int64_t kWindow = 7;

void expect_lane_documents_alone(const ModelOptions& options) {
  Generator gen(43);
  const Tensor ids = randint({2, kLaneLength}, gen, 0, 17);
  const Tensor targets = randint({2, kLaneLength}, gen, 0, 17);
  // Each token's document (its index in the row) and its document's first column.
  std::vector<double> documents;
  std::vector<std::vector<int64_t>> document_start(2);
  for (int64_t b = 0; b < 2; ++b) {
    int64_t start = 0;
    for (size_t d = 0; d < kLaneLayout[b].size(); ++d) {
      for (int64_t t = 0; t < kLaneLayout[b][d]; ++t) {
        documents.push_back(static_cast<double>(d));
        document_start[b].push_back(start);
      }
      start += kLaneLayout[b][d];
    }
  }
  const Tensor docs = tensor_from(documents, {2, kLaneLength}, DType::kI64);
  Generator init(3);
  models::CausalLm model(options, init, std::make_shared<Generator>(5));
  model.eval();
  NoGradGuard no_grad;
  models::CausalLm::CarriedState by_tokens, by_loss;
  Tensor lane_losses = Tensor::empty({2, kLaneLength}, options.dtype);
  for (int64_t start = 0; start < kLaneLength; start += kWindow) {
    std::vector<int64_t> positions;  // where each row's window starts in its document
    for (int64_t b = 0; b < 2; ++b) positions.push_back(start - document_start[b][start]);
    by_tokens.document_positions = positions;
    by_loss.document_positions = positions;
    const Tensor window_ids = ids.narrow(1, start, kWindow).contiguous();
    const Tensor window_targets = targets.narrow(1, start, kWindow).contiguous();
    const Tensor window_docs = docs.narrow(1, start, kWindow).contiguous();
    const Tensor losses =
        model.token_losses(window_ids, window_targets, 1024, &by_tokens, window_docs);
    lane_losses.narrow(1, start, kWindow).copy_from(losses);
    const double mean =
        model.continued_loss(window_ids, window_targets, by_loss, window_docs).item();
    double sum = 0;
    for (double x : losses.to_double_vector()) sum += x;
    EXPECT_NEAR(mean, sum / static_cast<double>(2 * kWindow), 1e-10) << "window at " << start;
  }
  for (int64_t b = 0; b < 2; ++b) {
    int64_t start = 0;
    for (int64_t len : kLaneLayout[b]) {
      const Tensor alone =
          model.token_losses(piece(ids, b, start, len), piece(targets, b, start, len));
      EXPECT_TRUE(testing::allclose(piece(lane_losses, b, start, len), alone, 1e-10, 1e-10))
          << "row " << b << " document at " << start;
      start += len;
    }
  }
}

TEST(PackedLanes, EveryDocumentOfALaneIsItselfAcrossWindows) {
  for (const Variant& v : models::testing::variants(DType::kF64)) {
    SCOPED_TRACE(v.name);
    expect_lane_documents_alone(v.options);
    ModelOptions segmented = v.options;  // segments of 3 inside the windows of 7
    segmented.segment_length = 3;
    SCOPED_TRACE("in segments of 3");
    expect_lane_documents_alone(segmented);
  }
}

TEST(PackedLanes, ARowCannotContinueADocumentWithoutAState) {
  Generator init(3);
  const ModelOptions options = models::testing::variants(DType::kF64).front().options;
  models::CausalLm model(options, init, std::make_shared<Generator>(5));
  models::CausalLm::CarriedState carried;
  carried.document_positions = {0, 4};
  const Tensor ids = zeros({2, 3}, DType::kI64);
  EXPECT_THROW(model.token_losses(ids, ids, 1024, &carried, ids), Error);
  carried.document_positions = {0};
  EXPECT_THROW(model.token_losses(ids, ids, 1024, &carried, ids), Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
