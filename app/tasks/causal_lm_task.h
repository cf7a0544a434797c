// Next-token prediction task: a causal LM on running text.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/tasks/lm_token_source.h"
#include "app/tasks/task.h"
#include "data/dataset/lm_dataset.h"
#include "models/language_models.h"

namespace rota::app {

/// Next-token prediction on running text. Metrics: loss (nats/token over every target of the
/// split), ppl = exp(loss).
class CausalLmTask : public Task {
 public:
  explicit CausalLmTask(TaskInputs inputs);
  nn::Module& model() override { return *model_; }
  models::CausalLm& causal_lm() { return *model_; }
  train::MicroBatch next_micro_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;
  std::vector<PositionBucket> evaluate_by_position(const std::string& split,
                                                   int64_t max_batches) override;
  void set_evaluation_stride(int64_t stride) override;
  std::vector<EvalBatch> evaluation_batches(const std::string& split, int64_t max_batches) override;
  /// The token stream of a split (encoded or mapped once, cached).
  data::TokenStream split_tokens(const std::string& split);

 protected:
  int64_t prepare_training_data() override;

 private:
  /// The windows of an evaluation split.
  data::CausalLmDataset eval_dataset(const std::string& split);

  std::shared_ptr<models::CausalLm> model_;
  LmTokenSource source_{*this};
  std::optional<data::CausalLmDataset> train_data_;
  int64_t evaluation_stride_ = 0;  // 0: non-overlapping evaluation windows
};

}  // namespace rota::app
