// Next-token prediction task: a causal LM on running text.
#pragma once

#include <functional>
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
  /// With `linearize` (attention transfer): the loss is the transfer loss against the teacher
  /// (app/setup/linearize_setup.h), not the next-token loss.
  train::MicroBatch next_micro_batch() override;
  /// The validation metrics; with `linearize` also the transfer loss over the same windows,
  /// overall ("transfer_mse") and per block ("transfer_mse_block<i>").
  train::Metrics evaluate() override;
  TrainingBatch next_training_batch() override;
  train::Metrics evaluate_split(const std::string& split, int64_t max_batches) override;
  std::vector<PositionBucket> evaluate_by_position(const std::string& split,
                                                   int64_t max_batches) override;
  void set_evaluation_stride(int64_t stride) override;
  std::vector<EvalBatch> evaluation_batches(const std::string& split, int64_t max_batches) override;
  /// The token stream of a split (encoded or mapped once, cached).
  data::TokenStream split_tokens(const std::string& split);
  /// train.carry_state: also the carried attention states (gathered from every rank).
  void save_state(io::TrainState& state) const override;
  std::map<std::string, std::string> checkpoint_files() const override;
  /// train.carry_state: this rank's lanes of the carried states, checked against the data
  /// cursor (refused when missing inside an epoch, or written for other lanes or another model).
  void restore_checkpoint_files(const std::map<std::string, std::string>& files) override;

 protected:
  int64_t prepare_training_data() override;

 private:
  /// The windows of an evaluation split.
  data::CausalLmDataset eval_dataset(const std::string& split);
  /// train.carry_state: a split read as eval_batch_size() lanes with the state carried from
  /// window to window (the first max_batches windows of each lane when > 0), calling
  /// score(batch, losses [lanes, W] f64, position of the batch's first token in its lane) for
  /// each. On rank 0 only; the caller shares the totals.
  void for_each_lane_window(
      const std::string& split, int64_t max_batches,
      const std::function<void(const data::LmBatch&, const Tensor&, int64_t)>& score);
  /// The batch with its documents marked (data.document_separator), or as it is.
  data::LmBatch packed(data::LmBatch batch) const;
  /// The shapes of one lane's carried states, from a one-token pass of the model.
  std::vector<Tensor> one_lane_states() const;

  /// linearize: the softmax teacher, loaded on first use.
  const models::CausalLm& teacher();

  std::shared_ptr<models::CausalLm> model_;
  std::shared_ptr<models::CausalLm> teacher_;
  LmTokenSource source_{*this};
  std::optional<data::CausalLmDataset> train_data_;
  int64_t evaluation_stride_ = 0;           // 0: non-overlapping evaluation windows
  const bool carry_state_;                  // train.carry_state
  models::CausalLm::CarriedState carried_;  // training: this rank's lanes' states
  mutable std::string carried_file_;        // the gathered states, set by save_state
  bool partial_lanes_noted_ = false;        // the log said what a partial lane evaluation is
};

}  // namespace rota::app
