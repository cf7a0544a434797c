// A run opened in-process (see loaded_run.h).
#include "python/native/loaded_run.h"

#include <cmath>

#include <fmt/format.h>

#include "app/run/prompt.h"
#include "app/setup/precision_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/masked_lm_task.h"
#include "data/dataset/batch.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/precision.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/io/checkpoint.h"
#include "framework/tensor/tensor.h"

namespace fs = std::filesystem;

namespace rota::python {
namespace {

// The run directory of a checkpoint directory RUN/checkpoints/step_N (else the directory given).
fs::path run_dir_of(const fs::path& given, const fs::path& checkpoint_dir) {
  const fs::path parent = checkpoint_dir.parent_path();
  if (parent.filename() == "checkpoints") return fs::absolute(parent.parent_path());
  return fs::absolute(given);
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* a_name, const char* b_name) {
  ROTA_CHECK(a.shape() == b.shape(), "{} {} must have the shape of {} {}", b_name,
             shape_str(b.shape()), a_name, shape_str(a.shape()));
}

// Next-token targets of ids: ids shifted left by one, data::kIgnoreIndex at the last position.
Tensor next_token_targets(const Tensor& ids) {
  const int64_t batch = ids.shape()[0], n = ids.shape()[1];
  Tensor targets = Tensor::empty(ids.shape(), DType::kI64);
  const int64_t* in = ids.data<int64_t>();
  int64_t* out = targets.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < n; ++t) {
      out[b * n + t] = t + 1 < n ? in[b * n + t + 1] : data::kIgnoreIndex;
    }
  }
  return targets;
}

}  // namespace

LoadedRun::LoadedRun(const std::string& run_or_checkpoint)
    : loaded_(app::load_checkpoint_task(run_or_checkpoint)) {
  run_dir_ = run_dir_of(run_or_checkpoint, loaded_.checkpoint_dir);
  loaded_.checkpoint_dir = fs::absolute(loaded_.checkpoint_dir);
  recipe_text_ = read_file(loaded_.checkpoint_dir / io::kRecipeFile);
  if (auto* classifier = dynamic_cast<app::ClassifierTask*>(loaded_.task.get())) {
    labels_ = classifier->label_names();
  }
}

std::string LoadedRun::kind() const {
  switch (loaded_.task->recipe().model().kind()) {
    case recipes::Model::MASKED_LM:
      return "masked_lm";
    case recipes::Model::CLASSIFIER:
      return "classifier";
    default:
      return "causal_lm";
  }
}

int64_t LoadedRun::vocab_size() const {
  return loaded_.task->model_options().vocab_size;
}

std::vector<std::pair<std::string, Tensor>> LoadedRun::state_dict() {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, tensor] : task().model().state_dict())
    out.emplace_back(name, tensor.clone());
  return out;
}

Tensor LoadedRun::logits(const Tensor& ids, const Tensor& key_mask) {
  std::lock_guard lock(mutex_);
  if (key_mask.defined()) check_same_shape(ids, key_mask, "ids", "key_mask");
  const MatmulPrecisionGuard precision(app::precision_from_recipe(task().recipe()));
  NoGradGuard no_grad;
  task().model().eval();
  if (auto* causal = dynamic_cast<app::CausalLmTask*>(&task())) {
    ROTA_CHECK(!key_mask.defined(),
               "logits: a causal LM takes no key_mask (a position sees only the ones before it: "
               "padding at the end changes no logits of real tokens)");
    return causal->causal_lm().forward(ids).data();
  }
  if (auto* masked = dynamic_cast<app::MaskedLmTask*>(&task())) {
    return masked->masked_lm().forward(ids, key_mask).data();
  }
  auto& classifier = dynamic_cast<app::ClassifierTask&>(task());
  const Tensor mask = key_mask.defined() ? key_mask : ones(ids.shape(), DType::kF32);
  return classifier.classifier().forward(ids, mask).data();
}

LossAndGrads LoadedRun::loss_and_grads(const Tensor& ids, const Tensor& targets,
                                       const Tensor& key_mask, const Tensor& labels) {
  std::lock_guard lock(mutex_);
  if (targets.defined()) check_same_shape(ids, targets, "ids", "targets");
  if (key_mask.defined()) check_same_shape(ids, key_mask, "ids", "key_mask");
  const MatmulPrecisionGuard precision(app::precision_from_recipe(task().recipe()));
  nn::Module& model = task().model();
  // Training mode changes only dropout, which is to stay off: the eval-mode forward is the
  // training forward without dropout.
  model.eval();
  model.zero_grad();
  Variable loss;
  if (auto* causal = dynamic_cast<app::CausalLmTask*>(&task())) {
    ROTA_CHECK(!key_mask.defined(), "loss_and_grads: a causal LM takes no key_mask");
    ROTA_CHECK(!labels.defined(), "loss_and_grads: labels are for classifiers");
    loss = causal->causal_lm().loss(ids, targets.defined() ? targets : next_token_targets(ids));
  } else if (auto* masked = dynamic_cast<app::MaskedLmTask*>(&task())) {
    ROTA_CHECK(targets.defined(),
               "loss_and_grads: a masked LM needs targets (the original ids at the corrupted "
               "positions, {} elsewhere)",
               data::kIgnoreIndex);
    ROTA_CHECK(!labels.defined(), "loss_and_grads: labels are for classifiers");
    loss = masked->masked_lm().loss(ids, targets, key_mask);
  } else {
    auto& classifier = dynamic_cast<app::ClassifierTask&>(task());
    ROTA_CHECK(labels.defined(), "loss_and_grads: a classifier needs labels [B]");
    ROTA_CHECK(!targets.defined(), "loss_and_grads: a classifier takes labels, not targets");
    ROTA_CHECK(labels.dim() == 1 && labels.shape()[0] == ids.shape()[0],
               "loss_and_grads: labels {} must be [B] for ids {}", shape_str(labels.shape()),
               shape_str(ids.shape()));
    const Tensor mask = key_mask.defined() ? key_mask : ones(ids.shape(), DType::kF32);
    loss = classifier.classifier().loss(ids, mask, labels);
  }
  LossAndGrads result;
  result.loss = loss.data().item();
  loss.backward();
  for (const auto& [name, parameter] : model.named_parameters()) {
    if (!parameter.requires_grad()) continue;
    const Tensor& grad = parameter.grad();
    result.grads.emplace_back(
        name, grad.defined() ? grad.to(DType::kF32).clone() : zeros(parameter.data().shape()));
  }
  model.zero_grad();
  return result;
}

std::vector<int64_t> LoadedRun::prompt_ids(const std::string& prompt) const {
  return app::encode_prompt(tokenizer(), prompt);
}

std::vector<app::GeneratedText> LoadedRun::generate(
    const std::vector<std::vector<int64_t>>& prompts, const app::TextGenerationOptions& options) {
  std::lock_guard lock(mutex_);
  auto* causal = dynamic_cast<app::CausalLmTask*>(&task());
  ROTA_CHECK(causal != nullptr,
             "generate: {} is not a causal language model (generation needs model.kind "
             "CAUSAL_LM)",
             loaded_.checkpoint_dir.string());
  const models::GenerationOptions& sampling = options.sampling;
  ROTA_CHECK(sampling.tokens >= 0, "generate: max_tokens must be >= 0, got {}", sampling.tokens);
  ROTA_CHECK(std::isfinite(sampling.temperature) && sampling.temperature >= 0,
             "generate: temperature must be a finite number >= 0, got {}", sampling.temperature);
  ROTA_CHECK(sampling.top_k >= 0, "generate: top_k must be >= 0, got {}", sampling.top_k);
  ROTA_CHECK(sampling.top_p > 0 && sampling.top_p <= 1, "generate: top_p must be in (0, 1], got {}",
             sampling.top_p);
  ROTA_CHECK(std::isfinite(sampling.repetition_penalty) && sampling.repetition_penalty > 0,
             "generate: repetition_penalty must be a finite number > 0, got {}",
             sampling.repetition_penalty);
  ROTA_CHECK(options.samples >= 1, "generate: num_samples must be >= 1, got {}", options.samples);
  for (const std::string& stop : options.stops) {
    ROTA_CHECK(!stop.empty(), "generate: stop: an empty stop string");
  }
  ROTA_CHECK(!prompts.empty(), "generate: no prompts");
  for (size_t p = 0; p < prompts.size(); ++p) {
    ROTA_CHECK(!prompts[p].empty(), "generate: {}the prompt encodes to no tokens",
               prompts.size() > 1 ? fmt::format("prompt {}: ", p) : std::string());
    for (int64_t id : prompts[p]) {
      ROTA_CHECK(id >= 0 && id < vocab_size(), "generate: prompt id {} is outside [0, {})", id,
                 vocab_size());
    }
  }
  const MatmulPrecisionGuard precision(app::precision_from_recipe(task().recipe()));
  task().model().eval();
  return app::generate_texts(causal->causal_lm(), tokenizer(), prompts, options);
}

std::string LoadedRun::evaluation_split(const std::string& requested) {
  std::lock_guard lock(mutex_);
  return task().evaluation_split_for(requested, loaded_.checkpoint_dir.string(), "split=");
}

train::Metrics LoadedRun::evaluate(const std::string& split, int64_t context, int64_t max_batches) {
  std::lock_guard lock(mutex_);
  ROTA_CHECK(max_batches >= 0, "eval: batches must be >= 0, got {}", max_batches);
  ROTA_CHECK(context >= 0, "eval: context must be >= 0, got {}", context);
  // Another context length: the model rebuilt for it, as `rota eval --context` does.
  std::optional<app::CheckpointTask> at_context;
  if (context > 0)
    at_context.emplace(app::load_checkpoint_task(loaded_.checkpoint_dir.string(), context));
  app::Task& evaluated = at_context ? *at_context->task : task();
  const MatmulPrecisionGuard precision(app::precision_from_recipe(evaluated.recipe()));
  NoGradGuard no_grad;
  evaluated.model().eval();
  return evaluated.evaluate_split(split, max_batches);
}

std::vector<app::EvalBatch> LoadedRun::evaluation_batches(const std::string& split,
                                                          int64_t max_batches) {
  std::lock_guard lock(mutex_);
  ROTA_CHECK(max_batches >= 0, "eval_batches: batches must be >= 0, got {}", max_batches);
  return task().evaluation_batches(split, max_batches);
}

}  // namespace rota::python
