// Causal LM task: token-stream windows, next-token loss, perplexity over a whole split.
#include "app/tasks/causal_lm_task.h"

#include <cmath>

#include <fmt/format.h>

#include "app/setup/linearize_setup.h"
#include "app/setup/lora_setup.h"
#include "app/tasks/carried_state_file.h"
#include "app/tasks/lm_evaluation.h"
#include "data/dataset/batch.h"
#include "data/dataset/documents.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/distributed/sharded_sums.h"
#include "framework/io/log.h"
#include "recipes/recipe_error.h"

namespace rota::app {

CausalLmTask::CausalLmTask(TaskInputs inputs)
    : Task(std::move(inputs)), carry_state_(recipe().train().carry_state()) {
  Generator init_gen(seeds_.init);
  model_ = std::make_shared<models::CausalLm>(model_options_, init_gen, dropout_gen_);
  add_recipe_adapters(inputs_.recipe, *model_, init_gen, dropout_gen_);
}

data::TokenStream CausalLmTask::split_tokens(const std::string& split) {
  return source_.split(split, /*min_tokens=*/2);
}

int64_t CausalLmTask::prepare_training_data() {
  if (!train_data_) {
    const int64_t seq_len = recipe().data().sequence_length();
    train_data_.emplace(split_tokens("train"), seq_len, data::WindowMode::kTrain,
                        data::padding_id(tokenizer()));
    data::WindowSampling sampling = training_window_sampling();
    data::LoaderOptions loader_options = training_loader_options();
    if (carry_state_) {
      // One lane per sequence of a loader batch (all ranks): batch g is window g of every lane.
      sampling.lanes = eval_batch_size();
      loader_options.shuffle = false;
    }
    train_data_->set_sampling(sampling);
    ROTA_CHECK(train_data_->size() >= recipe().data().batch_size(),
               "data: the train split has {} windows of {} tokens{}, fewer than one batch of {}",
               train_data_->size(), seq_len,
               carry_state_ ? fmt::format(" in {} lanes", sampling.lanes) : "",
               recipe().data().batch_size());
    loader_.emplace(train_data_->size(), loader_options);
  }
  return train_data_->size();
}

const models::CausalLm& CausalLmTask::teacher() {
  if (!teacher_) {
    // The teacher's weights and its forward pass come on top of the student's training.
    const recipes::Recipe& r = inputs_.recipe;
    const int64_t length = r.data().sequence_length();
    const models::MemoryEstimate student = trained_memory_estimate();
    const models::MemoryEstimate forward = models::inference_memory(
        attention_teacher_options(r, tokenizer().vocab_size()), micro_batch_size(), length);
    models::MemoryEstimate both = student;
    both.parameters += forward.parameters;
    both.parameter_bytes += forward.parameter_bytes;
    both.activation_bytes += forward.activation_bytes;
    check_memory_budget(both, inputs_.memory, r,
                        "attention transfer (the student's training and "
                        "the teacher's forward pass)",
                        micro_batch_size(), length);
    teacher_ = load_attention_teacher(r, tokenizer().vocab_size(), *model_);
    io::log_info("linearize: teacher {} ({} blocks of softmax attention)",
                 inputs_.recipe.finetune().init_from(), teacher_->encoder().num_blocks());
  }
  return *teacher_;
}

train::Metrics CausalLmTask::evaluate() {
  train::Metrics metrics = Task::evaluate();
  if (!inputs_.recipe.has_linearize()) return metrics;
  NoGradGuard no_grad;
  const int64_t blocks = model_->encoder().num_blocks();
  std::vector<double> weighted(blocks, 0.0);
  double tokens = 0.0;
  for (const EvalBatch& batch :
       evaluation_batches(validation_split(), inputs_.recipe.train().eval_batches())) {
    // The positions that have a target: every real token but a split's last (a partial last
    // window's padding has none).
    std::vector<double> real = batch.targets.to_double_vector();
    double count = 0.0;
    for (double& t : real) {
      t = t == static_cast<double>(data::kIgnoreIndex) ? 0.0 : 1.0;
      count += t;
    }
    std::vector<double> per_block;
    attention_transfer_loss(teacher(), *model_, batch.tokens,
                            tensor_from(real, batch.targets.shape(), DType::kF32), &per_block);
    for (int64_t i = 0; i < blocks; ++i) weighted[i] += per_block[i] * count;
    tokens += count;
  }
  double total = 0.0;
  for (double w : weighted) total += w / tokens;
  metrics.emplace_back("transfer_mse", total / static_cast<double>(blocks));
  for (int64_t i = 0; i < blocks; ++i) {
    metrics.emplace_back(fmt::format("transfer_mse_block{}", i), weighted[i] / tokens);
  }
  return metrics;
}

train::MicroBatch CausalLmTask::next_micro_batch() {
  prepare_training_data();
  const data::LoaderBatch indices = loader_->next();
  const data::LmBatch batch = packed(train_data_->batch(indices.indices, indices.epoch));
  if (inputs_.recipe.has_linearize()) {
    return {attention_transfer_loss(teacher(), *model_, batch.tokens, Tensor()),
            batch.target_count};
  }
  if (!carry_state_) {
    return {model_->loss(batch.tokens, batch.targets, batch.segment_ids), batch.target_count};
  }
  // This rank's lanes at their window g: the first continues from nothing (a new epoch).
  const int64_t g = train_data_->lane_step(indices.indices.front());
  if (g == 0) carried_ = {};
  ROTA_CHECK(carried_.position == g * train_data_->seq_len(),
             "train: the carried state is at position {}, but window {} of the lanes starts at {}",
             carried_.position, g, g * train_data_->seq_len());
  if (batch.segment_ids.defined() && carried_.document_positions.empty()) {
    // The lanes' first window, or the first after a resume: where each row's document began.
    const data::TokenStream stream = split_tokens("train");
    const int64_t lanes = eval_batch_size();
    for (const int64_t w : indices.indices) {
      carried_.document_positions.push_back(data::document_position_at(
          *stream, train_data_->window_start(w % lanes, indices.epoch),
          train_data_->window_start(w, indices.epoch), document_separator()));
    }
  }
  train::MicroBatch micro{
      model_->continued_loss(batch.tokens, batch.targets, carried_, batch.segment_ids),
      batch.target_count};
  if (batch.segment_ids.defined()) {
    carried_.document_positions = data::document_positions_after(
        batch.tokens, document_separator(), std::move(carried_.document_positions));
  }
  return micro;
}

TrainingBatch CausalLmTask::next_training_batch() {
  if (carry_state_) {
    throw recipes::RecipeError(
        "training batches: with train.carry_state every window continues the model's state "
        "from the one before, which batches alone cannot give; train with rota train");
  }
  prepare_training_data();
  const data::LoaderBatch indices = loader_->next();
  const data::LmBatch batch = packed(train_data_->batch(indices.indices, indices.epoch));
  return {batch.tokens, batch.targets, Tensor(), Tensor(), batch.segment_ids, indices.epoch};
}

data::LmBatch CausalLmTask::packed(data::LmBatch batch) const {
  if (document_separator() >= 0) data::mark_causal_documents(batch, document_separator());
  return batch;
}

void CausalLmTask::save_state(io::TrainState& state) const {
  Task::save_state(state);
  if (!carry_state_) return;
  // Collective: every rank's lanes, joined in rank order (lane order).
  const std::vector<Tensor> states = gather_lane_states(communicator(), carried_.states);
  carried_file_ = encode_carried_states(states, carried_.position, eval_batch_size());
}

std::map<std::string, std::string> CausalLmTask::checkpoint_files() const {
  std::map<std::string, std::string> files = Task::checkpoint_files();
  if (carry_state_) files[kCarriedStateFile] = carried_file_;
  return files;
}

std::vector<Tensor> CausalLmTask::one_lane_states() const {
  NoGradGuard no_grad;
  // A training-mode pass draws dropout masks: the stream is put back as it was.
  const Generator::State dropout_state = dropout_gen_->state();
  const Tensor ids = zeros({1, 1}, DType::kI64);
  std::vector<Tensor> states;
  for (const Variable& state : model_->encoder().forward_segment(ids, 0, {}).states) {
    states.push_back(state.data());
  }
  dropout_gen_->set_state(dropout_state);
  return states;
}

void CausalLmTask::restore_checkpoint_files(const std::map<std::string, std::string>& files) {
  if (!carry_state_) return;
  prepare_training_data();
  // The next window of the lanes: where the restored cursor is (0 at an epoch's end).
  const int64_t lanes = eval_batch_size();
  const int64_t g = (loader_->cursor().position / lanes) % loader_->batches_per_epoch();
  const int64_t position = g * train_data_->seq_len();
  carried_ = {};
  if (g == 0) return;  // the next window starts the lanes again (a new epoch)
  const auto file = files.find(kCarriedStateFile);
  ROTA_CHECK(file != files.end(),
             "resume: the checkpoint has no {}, but this run carries the attention state "
             "(train.carry_state) and stopped at window {} of its lanes; it cannot continue "
             "exactly",
             kCarriedStateFile, g);
  const int64_t mine = micro_batch_size();
  carried_ =
      decode_carried_states(file->second, kCarriedStateFile, {lanes, position, one_lane_states()},
                            communicator().rank() * mine, mine);
}

void CausalLmTask::set_evaluation_stride(int64_t stride) {
  const int64_t length = recipe().data().sequence_length();
  if (stride < 0 || stride > length) {
    throw recipes::RecipeError(fmt::format(
        "--stride {}: must be in [1, {}], the evaluation window (--context or the recipe's "
        "data.sequence_length)",
        stride, length));
  }
  if (carry_state_ && stride != 0 && stride != length) {
    throw recipes::RecipeError(fmt::format(
        "--stride {}: a run with train.carry_state evaluates each split as lanes with the state "
        "carried from window to window, so every token already sees all of its lane before it; "
        "sliding windows do not apply",
        stride));
  }
  evaluation_stride_ = stride;
}

data::CausalLmDataset CausalLmTask::eval_dataset(const std::string& split) {
  return data::CausalLmDataset(split_tokens(split), recipe().data().sequence_length(),
                               data::WindowMode::kEval, data::padding_id(tokenizer()),
                               evaluation_stride_);
}

void CausalLmTask::for_each_lane_window(
    const std::string& split, int64_t max_batches,
    const std::function<void(const data::LmBatch&, const Tensor&, int64_t)>& score) {
  const data::LaneWindows lanes(split_tokens(split), recipe().data().sequence_length(),
                                eval_batch_size(), data::padding_id(tokenizer()));
  const int64_t batches =
      max_batches > 0 ? std::min(max_batches, lanes.batches()) : lanes.batches();
  models::CausalLm::CarriedState carried;
  // Packed documents: every lane starts one.
  if (document_separator() >= 0)
    carried.document_positions.assign(static_cast<size_t>(lanes.lanes()), 0);
  for (int64_t g = 0; g < batches; ++g) {
    const data::LmBatch batch = packed(lanes.batch(g));
    check_batch_memory(batch.tokens);
    const int64_t position = carried.position;
    const Tensor losses =
        model_->token_losses(batch.tokens, batch.targets, 1024, &carried, batch.segment_ids)
            .to(DType::kF64);
    if (batch.segment_ids.defined()) {
      // A lane that has ended is padding: its position no longer matters.
      carried.document_positions = data::document_positions_after(
          batch.tokens, document_separator(), std::move(carried.document_positions));
    }
    // Every lane's window g starts at g·T; a narrower last batch moves the position less, but
    // no window follows it.
    carried.position = (g + 1) * lanes.seq_len();
    score(batch, losses, position);
  }
}

train::Metrics CausalLmTask::evaluate_split(const std::string& split, int64_t max_batches) {
  if (carry_state_) {
    // The lanes run one after another window by window on rank 0 (each window needs the
    // state of the one before); every rank gets the totals.
    distributed::ShardedSums sums(communicator(), 1, 1, 1);
    if (sums.mine(0)) {
      double loss_sum = 0;
      int64_t targets = 0;
      for_each_lane_window(split, max_batches,
                           [&](const data::LmBatch& batch, const Tensor& losses, int64_t) {
                             const Tensor kept = batch.targets.contiguous();
                             const int64_t* target = kept.data<int64_t>();
                             const double* loss = losses.data<double>();
                             for (int64_t i = 0; i < kept.numel(); ++i) {
                               if (target[i] == data::kIgnoreIndex) continue;
                               loss_sum += loss[i];
                               ++targets;
                             }
                           });
      sums.set(0, std::vector<double>{loss_sum}, std::vector<int64_t>{targets});
    }
    const distributed::ShardedSums::Totals totals = sums.totals();
    ROTA_CHECK(totals.ints[0] > 0, "eval: the {} split has no targets", split);
    const double loss = totals.doubles[0] / static_cast<double>(totals.ints[0]);
    // What the figure measures: the lanes' first `lane_positions` positions of `lane_length`.
    // With train.eval_batches the validation during training stops short of the lanes' ends,
    // so its tokens have less context before them than the whole split's.
    const data::LaneWindows layout(split_tokens(split), recipe().data().sequence_length(),
                                   eval_batch_size(), data::padding_id(tokenizer()));
    const int64_t windows =
        max_batches > 0 ? std::min(max_batches, layout.batches()) : layout.batches();
    const int64_t reached = std::min(windows * layout.seq_len(), layout.lane_length());
    if (reached < layout.lane_length() && !partial_lanes_noted_) {
      partial_lanes_noted_ = true;
      io::log_info(
          "{}: with train.carry_state each of the {} lanes is scored over its first {} "
          "positions of {} ({} windows per lane, train.eval_batches); the whole split "
          "(`rota eval RUN --split {}`, or train.eval_batches: 0) scores every position, with "
          "more context before it, and can give another loss",
          split, layout.lanes(), reached, layout.lane_length(), windows, split);
    }
    return {{"loss", loss},
            {"ppl", std::exp(loss)},
            {"tokens", static_cast<double>(totals.ints[0])},
            {"lane_positions", static_cast<double>(reached)},
            {"lane_length", static_cast<double>(layout.lane_length())}};
  }
  const data::CausalLmDataset dataset = eval_dataset(split);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  const LmLossTotals totals = lm_loss_totals(
      communicator(), loader, max_batches,
      [&](const std::vector<int64_t>& indices) { return packed(dataset.batch(indices)); },
      [&](const data::LmBatch& batch) {
        check_batch_memory(batch.tokens);
        return model_->loss(batch.tokens, batch.targets, batch.segment_ids).item();
      });
  const int64_t targets = totals.targets;
  ROTA_CHECK(targets > 0, "eval: the {} split has no targets", split);
  const double loss = totals.loss_sum / static_cast<double>(targets);
  return {{"loss", loss}, {"ppl", std::exp(loss)}, {"tokens", static_cast<double>(targets)}};
}

std::vector<PositionBucket> CausalLmTask::evaluate_by_position(const std::string& split,
                                                               int64_t max_batches) {
  if (carry_state_) {
    // Positions within each lane (the context the carried state has seen), on rank 0.
    const data::LaneWindows layout(split_tokens(split), recipe().data().sequence_length(),
                                   eval_batch_size(), data::padding_id(tokenizer()));
    std::vector<PositionBucket> buckets =
        position_buckets(std::max<int64_t>(layout.lane_length(), 1));
    const auto count = static_cast<int64_t>(buckets.size());
    distributed::ShardedSums sums(communicator(), 1, count, count);
    if (sums.mine(0)) {
      std::vector<double> loss_sums(count, 0.0);
      std::vector<int64_t> tokens(count, 0);
      for_each_lane_window(split, max_batches,
                           [&](const data::LmBatch& batch, const Tensor& losses, int64_t position) {
                             const Tensor kept = batch.targets.contiguous();
                             const int64_t* target = kept.data<int64_t>();
                             const double* loss = losses.data<double>();
                             const int64_t rows = kept.size(0), width = kept.size(1);
                             for (int64_t r = 0; r < rows; ++r) {
                               for (int64_t t = 0; t < width; ++t) {
                                 if (target[r * width + t] == data::kIgnoreIndex) continue;
                                 const int64_t k = bucket_of(position + t + 1);
                                 loss_sums[k] += loss[r * width + t];
                                 ++tokens[k];
                               }
                             }
                           });
      sums.set(0, loss_sums, tokens);
    }
    const distributed::ShardedSums::Totals totals = sums.totals();
    for (int64_t k = 0; k < count; ++k) {
      buckets[k].loss_sum = totals.doubles[k];
      buckets[k].tokens = totals.ints[k];
    }
    return buckets;
  }
  const data::CausalLmDataset dataset = eval_dataset(split);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  std::vector<PositionBucket> buckets = position_buckets(dataset.seq_len());
  const auto count = static_cast<int64_t>(buckets.size());
  const int64_t batches = evaluation_batch_count(loader, max_batches);
  // Batch b on rank b % ranks; per bucket the loss sum and the token count, added in batch
  // order (as evaluate_split, so the totals do not depend on the number of ranks).
  distributed::ShardedSums sums(communicator(), batches, count, count);
  for (int64_t b = 0; b < batches; ++b) {
    const std::vector<int64_t> indices = loader.next().indices;
    if (!sums.mine(b)) continue;
    const data::LmBatch batch = packed(dataset.batch(indices));
    check_batch_memory(batch.tokens);
    const Tensor losses =
        model_->token_losses(batch.tokens, batch.targets, 1024, nullptr, batch.segment_ids)
            .to(DType::kF64);
    const Tensor targets = batch.targets.contiguous();
    const double* loss = losses.data<double>();
    const int64_t* target = targets.data<int64_t>();
    std::vector<double> loss_sums(count, 0.0);
    std::vector<int64_t> tokens(count, 0);
    const int64_t rows = batch.tokens.size(0), width = batch.tokens.size(1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < width; ++t) {
        if (target[r * width + t] == data::kIgnoreIndex) continue;  // padding, or context
        const int64_t k = bucket_of(t + 1);
        loss_sums[k] += loss[r * width + t];
        ++tokens[k];
      }
    }
    sums.set(b, loss_sums, tokens);
  }
  const distributed::ShardedSums::Totals totals = sums.totals();
  for (int64_t k = 0; k < count; ++k) {
    buckets[k].loss_sum = totals.doubles[k];
    buckets[k].tokens = totals.ints[k];
  }
  return buckets;
}

std::vector<EvalBatch> CausalLmTask::evaluation_batches(const std::string& split,
                                                        int64_t max_batches) {
  if (carry_state_) {
    throw recipes::RecipeError(
        "evaluation batches: a run with train.carry_state evaluates each split as lanes with "
        "the state carried from batch to batch, which separate batches cannot reproduce");
  }
  if (document_separator() >= 0) throw packed_batches_refusal();
  const data::CausalLmDataset dataset = eval_dataset(split);
  data::BatchLoader loader(dataset.size(), evaluation_loader_options());
  std::vector<EvalBatch> batches;
  for (int64_t b = 0; b < evaluation_batch_count(loader, max_batches); ++b) {
    const data::LmBatch batch = dataset.batch(loader.next().indices);
    if (batch.target_count == 0) continue;  // lm_loss_totals skips it too
    batches.push_back({batch.tokens, batch.targets, Tensor(), Tensor()});
  }
  return batches;
}

}  // namespace rota::app
