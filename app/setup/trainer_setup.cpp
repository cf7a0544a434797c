// Recipe `train` section → trainer options and threads (see trainer_setup.h).
#include "app/setup/trainer_setup.h"

#include "framework/backend/cpu/parallel.h"

namespace rota::app {

train::TrainerOptions trainer_options_from_recipe(const recipes::Recipe& recipe,
                                                  const std::filesystem::path& run_dir,
                                                  int64_t total_steps,
                                                  const std::string& recipe_text) {
  const recipes::Train& t = recipe.train();
  train::TrainerOptions o;
  o.run_dir = run_dir;
  o.total_steps = total_steps;
  o.eval_every = t.eval_every();
  o.checkpoint_every = t.checkpoint_every();
  o.keep_checkpoints = t.keep_checkpoints();
  o.log_every = t.log_every();
  o.step.grad_accumulation = t.gradient_accumulation();
  o.step.clip_norm = t.grad_clip();
  o.tensorboard = t.tensorboard();
  o.recipe_text = recipe_text;
  o.seed = t.seed();
  recipes::Train::Metric metric = t.best_metric();
  if (!t.has_best_metric()) {
    const bool classifier = recipe.model().kind() == recipes::Model::CLASSIFIER;
    metric = !classifier                        ? recipes::Train::LOSS
             : recipe.data().corpus() == "cola" ? recipes::Train::MCC
                                                : recipes::Train::ACCURACY;
  }
  o.best_metric = metric == recipes::Train::LOSS  ? "loss"
                  : metric == recipes::Train::MCC ? "mcc"
                                                  : "accuracy";
  o.higher_is_better = metric != recipes::Train::LOSS;
  if (t.has_early_stopping()) {
    o.early_stopping_patience = t.early_stopping().patience();
    o.early_stopping_min_delta = t.early_stopping().min_delta();
  }
  return o;
}

int apply_thread_setting(const recipes::Recipe& recipe) {
  backend::init_runtime();
  // Set every time, from the recipe or the environment: another library in the process may have
  // changed OpenMP's count for this thread (importing PyTorch in Python leaves it at 1).
  const int threads =
      recipe.train().threads() > 0 ? recipe.train().threads() : backend::default_num_threads();
  backend::set_num_threads(threads);
  return threads;
}

}  // namespace rota::app
