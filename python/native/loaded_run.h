// A trained run opened in-process: the model, its tokenizer and what rota eval/generate do with it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/run/text_generation.h"
#include "app/tasks/checkpoint_task.h"
#include "framework/train/trainer.h"

namespace rota::python {

/// A loss and the gradient of every trainable parameter (checkpoint names).
struct LossAndGrads {
  double loss = 0;
  std::vector<std::pair<std::string, Tensor>> grads;
};

/// A checkpoint loaded as `rota eval` and `rota generate` load it (app::load_checkpoint_task). The
/// methods take a lock: one call computes at a time. Compute runs in the precision the model was
/// trained in (train.dtype), like the CLI.
class LoadedRun {
 public:
  /// A run directory (its latest checkpoint) or a checkpoint directory.
  explicit LoadedRun(const std::string& run_or_checkpoint);

  /// The run directory (the checkpoint's run when given a checkpoint of run/checkpoints/).
  const std::filesystem::path& run_dir() const { return run_dir_; }
  const std::filesystem::path& checkpoint_dir() const { return loaded_.checkpoint_dir; }
  int64_t step() const { return loaded_.state.step(); }
  /// The checkpoint's recipe.txtpb (the resolved recipe).
  const std::string& recipe_text() const { return recipe_text_; }
  /// "causal_lm", "masked_lm" or "classifier".
  std::string kind() const;
  int64_t vocab_size() const;
  /// Class names (classifiers: labels.json or "0" … "C−1"); empty for language models.
  const std::vector<std::string>& labels() const { return labels_; }
  const data::Tokenizer& tokenizer() const { return loaded_.task->tokenizer(); }
  int64_t num_parameters() const { return loaded_.task->model().num_parameters(); }

  /// Copies of the parameters and buffers under their checkpoint names.
  std::vector<std::pair<std::string, Tensor>> state_dict();
  /// Eval-mode logits: ids [B, N] → [B, N, V] (LMs) or [B, C] (classifier). key_mask [B, N] (f32,
  /// 1 real, 0 padding) for masked LMs and classifiers (undefined: all real); refused for a causal
  /// LM.
  Tensor logits(const Tensor& ids, const Tensor& key_mask);
  /// The trainer's micro-batch loss and its gradients, without dropout and without an update:
  /// causal LM targets [B, N] (undefined: ids shifted left, the last position ignored); masked LM
  /// targets [B, N] (required) and key_mask; classifier key_mask and labels [B] (required).
  LossAndGrads loss_and_grads(const Tensor& ids, const Tensor& targets, const Tensor& key_mask,
                              const Tensor& labels);
  /// `rota generate`: the prompt's ids (app::encode_prompt).
  std::vector<int64_t> prompt_ids(const std::string& prompt) const;
  /// `rota generate` for every prompt × sample, as rows of batches (app::generate_texts): each
  /// row's text is what `rota generate` prints for it (without its final newline).
  std::vector<app::GeneratedText> generate(const std::vector<std::vector<int64_t>>& prompts,
                                           const app::TextGenerationOptions& options);
  /// The split `rota eval --split` would evaluate for `requested` ("" is test; valid and its
  /// aliases the data's validation split); a RecipeError naming the splits when there is none.
  std::string evaluation_split(const std::string& requested);
  /// `rota eval`: the metrics of a split (max_batches 0: all), at another context when > 0.
  train::Metrics evaluate(const std::string& split, int64_t context, int64_t max_batches);
  /// The batches that evaluate feeds the model (see app::Task::evaluation_batches).
  std::vector<app::EvalBatch> evaluation_batches(const std::string& split, int64_t max_batches);

 private:
  app::Task& task() { return *loaded_.task; }

  std::mutex mutex_;
  app::CheckpointTask loaded_;
  std::filesystem::path run_dir_;
  std::string recipe_text_;
  std::vector<std::string> labels_;
};

}  // namespace rota::python
