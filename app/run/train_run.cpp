// `rota train` orchestration: agreement across ranks, resume, set-up, training, the final report.
#include "app/run/train_run.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "app/run/exit_codes.h"
#include "app/run/prompt.h"
#include "app/run/rank_agreement.h"
#include "app/run/resume_policy.h"
#include "app/run/shared_tokenizer.h"
#include "app/run/temp_cleanup.h"
#include "app/setup/finetune_setup.h"
#include "app/setup/memory_budget.h"
#include "app/setup/optimizer_setup.h"
#include "app/setup/precision_setup.h"
#include "app/setup/schedule_setup.h"
#include "app/setup/trainer_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "data/tokenizer/huggingface/hf_text.h"
#include "framework/base/directory_lock.h"
#include "framework/base/file_io.h"
#include "framework/distributed/launch.h"
#include "framework/distributed/run_guard.h"
#include "framework/io/checkpoint.h"
#include "framework/io/log.h"
#include "framework/io/metrics_writer.h"
#include "models/generation.h"
#include "models/memory_estimate.h"
#include "models/model_flops.h"
#include "recipes/loader.h"
#include "recipes/validate.h"

namespace fs = std::filesystem;

namespace rota::app {
namespace {

// Rank 0 looks at the run directory and decides; the others follow its answer.
std::optional<fs::path> agree_on_resume(distributed::Communicator& comm, const fs::path& run_dir,
                                        bool resume, const std::string& recipe_text) {
  ResumeDecision decision;
  if (comm.rank() == 0) decision = decide_resume(run_dir, resume, recipe_text);
  const std::string refusal = distributed::broadcast_string(comm, decision.refusal);
  if (!refusal.empty()) refuse_on_every_rank(comm, refusal);
  const std::string latest =
      distributed::broadcast_string(comm, decision.latest ? decision.latest->string() : "");
  return latest.empty() ? std::nullopt : std::optional<fs::path>(latest);
}

// Rank 0 (the only rank that writes into the run directory) takes RUN/.lock for the whole run,
// before the resume decision reads the directory and before anything is written into it. When
// another process holds it, the run stops here on every rank with exit code 1, naming the holder.
std::unique_ptr<DirectoryLock> lock_run_directory(distributed::Communicator& comm,
                                                  const fs::path& run_dir) {
  std::unique_ptr<DirectoryLock> lock;
  std::string busy;
  if (comm.rank() == 0) {
    try {
      lock = std::make_unique<DirectoryLock>(
          run_dir, "wait for it to finish or stop it, or train into another --out");
    } catch (const DirectoryBusyError& e) {
      if (comm.world_size() == 1) throw;
      busy = e.what();
    }
  }
  if (comm.world_size() > 1) busy = distributed::broadcast_string(comm, busy);
  if (!busy.empty()) throw distributed::CollectiveError(busy, kExitFailure);
  return lock;
}

// The model, optimizer and schedule of a run, ready for the trainer.
struct TrainingSetup {
  std::unique_ptr<Task> task;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LrSchedule> schedule;
  int64_t total_steps = 0;
  std::optional<io::BaseWeights> base_weights;  // a finetune.lora run's base reference
};

TrainingSetup set_up_training(const recipes::Recipe& recipe,
                              const std::shared_ptr<distributed::Communicator>& comm,
                              const std::optional<fs::path>& latest, const MemoryBudget& memory) {
  TrainingSetup setup;
  TaskInputs inputs;
  inputs.recipe = recipe;
  inputs.communicator = comm;
  inputs.memory = memory;
  inputs.tokenizer = shared_tokenizer(*comm, recipe, latest, inputs.data_options);
  inputs.checkpoint = latest;
  setup.task = make_task(std::move(inputs));
  setup.task->load_data();  // every split read and checked before training starts
  nn::Module& model = setup.task->model();
  if (latest) {
    // Weights come from the checkpoint (the trainer reads them; its base reference carries on
    // with its state); only the frozen set must be re-applied.
    const io::TrainState state = io::decode_train_state(read_file(*latest / io::kStateFile),
                                                        (*latest / io::kStateFile).string());
    refreeze_on_resume(recipe, model, state);
  } else {
    setup.base_weights = apply_finetune(recipe, model).base_weights;
  }
  // With adapters or attention transfer the frozen weights need no optimizer state: checked
  // now that it is known.
  if (recipe.has_finetune() && (recipe.finetune().has_lora() || recipe.has_linearize())) {
    setup.task->check_trained_memory();
  }
  setup.total_steps = total_steps_from_recipe(
      recipe, recipe.train().has_epochs() ? setup.task->steps_per_epoch() : 1);
  setup.optimizer = optimizer_from_recipe(recipe, model);
  setup.schedule = optim::make_schedule(schedule_options_from_recipe(recipe, setup.total_steps));
  return setup;
}

void log_setup(const recipes::Recipe& recipe, const TrainingSetup& setup,
               const distributed::Communicator& comm) {
  nn::Module& model = setup.task->model();
  int64_t trainable = 0;
  for (const auto& p : model.parameters()) trainable += p.requires_grad() ? p.data().numel() : 0;
  io::log_info(
      "model: {} parameters ({} trainable); vocabulary {}; {} steps of {} sequences x {} tokens",
      model.num_parameters(), trainable, setup.task->tokenizer().vocab_size(), setup.total_steps,
      recipe.data().batch_size(), recipe.data().sequence_length());
  if (comm.world_size() > 1) {
    io::log_info("data-parallel: {} ranks x {} micro-batches x {} sequences = {} per step",
                 comm.world_size(), recipe.train().gradient_accumulation(),
                 setup.task->micro_batch_size(), recipe.data().batch_size());
  }
}

// train.sample: a continuation of the prompt after a causal LM's training. Printed as valid UTF-8
// (a byte model can end a character half way or make up invalid sequences: U+FFFD for those).
void print_sample(const recipes::Recipe& recipe, Task& task) {
  auto* causal = dynamic_cast<CausalLmTask*>(&task);
  if (!causal || !recipe.train().has_sample()) return;
  const recipes::Sample& s = recipe.train().sample();
  models::GenerationOptions options;
  options.tokens = s.tokens();
  options.temperature = s.temperature();
  options.top_k = s.top_k();
  options.seed = recipe.train().seed();
  options.vocab_limit = task.tokenizer().vocab_size();
  causal->model().eval();
  std::vector<int64_t> all = encode_prompt(task.tokenizer(), s.prompt());
  const std::vector<int64_t> generated = models::generate(causal->causal_lm(), all, options);
  all.insert(all.end(), generated.begin(), generated.end());
  std::printf("---- sample (temperature %.2g, top-k %lld, seed %llu) ----\n%s\n----\n",
              s.temperature(), static_cast<long long>(s.top_k()),
              static_cast<unsigned long long>(recipe.train().seed()),
              data::hf::to_valid_utf8(task.tokenizer().decode(all)).c_str());
  std::fflush(stdout);
}

// The command that continues an interrupted run.
std::string resume_command(const TrainRequest& request, int world_size) {
  std::string again = request.program + " train " + request.recipe;
  for (const std::string& o : request.overrides) again += " --set '" + o + "'";
  if (!request.out.empty()) again += " --out " + request.out;
  if (world_size > 1) again = fmt::format("mpirun -np {} {}", world_size, again);
  return again + " --resume";
}

// The request's recipe, from its file or its text.
recipes::Recipe load_request_recipe(distributed::Communicator& comm, const TrainRequest& request) {
  if (request.recipe_text.empty()) {
    return load_recipe_on_every_rank(comm, request.recipe, request.overrides);
  }
  return recipes::load_recipe_text(request.recipe_text, request.recipe, request.overrides,
                                   pretrained_model);
}

// Started by mpirun (or another MPI launcher), whatever the number of ranks.
bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

// --dry-run: everything `rota train` checks and builds before its first step, reported, then
// one forward pass of the first micro-batch; nothing is written into the run directory.
int dry_run(const recipes::Recipe& recipe, const std::shared_ptr<distributed::Communicator>& comm,
            const TrainRequest& request, const fs::path& run_dir) {
  const bool root = comm->rank() == 0;
  TrainingSetup setup =
      set_up_training(recipe, comm, std::nullopt, MemoryBudget{request.max_memory});
  Task& task = *setup.task;
  const models::ModelOptions& options = task.model_options();
  const int64_t length = recipe.data().sequence_length();
  const int64_t micro_batch = task.micro_batch_size();
  const models::MemoryEstimate memory = task.trained_memory_estimate();
  int64_t trainable = 0;
  for (const auto& p : task.model().parameters()) {
    trainable += p.requires_grad() ? p.data().numel() : 0;
  }
  const double flops = models::training_flops_per_token(options, length);
  train::MicroBatch first = task.next_micro_batch();
  const double loss = first.loss.item();
  if (!root) return kExitOk;
  const int64_t available = available_memory_bytes();
  const double budget =
      static_cast<double>(request.max_memory > 0 ? request.max_memory : available);
  std::string report =
      fmt::format("dry run of {} (nothing written; the run directory would be {})\n",
                  request.recipe, run_dir.string());
  report += fmt::format(
      "model: {}, {} layers x width {}, {} heads; {} parameters ({} trainable); vocabulary {}\n",
      recipes::Model::Kind_Name(recipe.model().kind()), options.layers, options.dim, options.heads,
      task.model().num_parameters(), trainable, task.tokenizer().vocab_size());
  report += fmt::format(
      "compute: {:.3g} FLOPs per trained token, {:.3g} per step ({} sequences x {} tokens)\n",
      flops, flops * static_cast<double>(recipe.data().batch_size() * length),
      recipe.data().batch_size(), length);
  report += fmt::format(
      "memory (estimate): {} = weights {} + gradients and optimizer state {} + activations {} "
      "for {} x {} tokens per micro-batch; {} {}\n",
      format_bytes(memory.total()), format_bytes(memory.parameter_bytes),
      format_bytes(memory.state_bytes), format_bytes(memory.activation_bytes), micro_batch, length,
      request.max_memory > 0 ? "--max-memory" : "available now", format_bytes(budget));
  // The loss of a uniform guess: ln V over the vocabulary for LMs, ln C over the classes for a
  // classifier (whose loss is per example, not per token).
  if (recipe.model().kind() == recipes::Model::CLASSIFIER) {
    report += fmt::format(
        "first micro-batch: [{}, {}] tokens, {} examples, loss {:.4f} per example (ln C = {:.4f} "
        "for C = {} classes is a uniform guess)\n",
        micro_batch, length, micro_batch, loss, std::log(static_cast<double>(options.num_classes)),
        options.num_classes);
  } else {
    report += fmt::format(
        "first micro-batch: [{}, {}] tokens, {} targets, loss {:.4f} per target (ln V = {:.4f} "
        "for V = {} is a uniform guess)\n",
        micro_batch, length, first.tokens, loss,
        std::log(static_cast<double>(task.tokenizer().vocab_size())),
        task.tokenizer().vocab_size());
  }
  report += fmt::format("schedule: {} steps\n", setup.total_steps);
  // What the real run would find in its directory.
  const ResumeDecision decision =
      decide_resume(run_dir, request.resume, recipes::format_recipe(recipe));
  if (!decision.refusal.empty()) {
    report += "warning: the run would stop here: " + decision.refusal + "\n";
  } else if (decision.latest) {
    report += fmt::format("resume: the run would continue from {}\n", decision.latest->string());
  }
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

int train_on_this_rank(const TrainRequest& request,
                       const std::shared_ptr<distributed::Communicator>& comm_ptr,
                       TrainResult& result) {
  distributed::Communicator& comm = *comm_ptr;
  const bool root = comm.rank() == 0;
  // The other ranks only report problems; rank 0 tells the story.
  if (!root && io::log_level() < io::LogLevel::kWarn) io::set_log_level(io::LogLevel::kWarn);
  const recipes::Recipe recipe = load_request_recipe(comm, request);
  // train.dtype holds for the whole run on this rank (training steps, validation, the sample);
  // every rank loads the same recipe, so all compute alike.
  const MatmulPrecisionGuard precision(precision_from_recipe(recipe));
  const int threads = apply_thread_setting(recipe);
  warn_about_core_binding(comm, threads);
  const fs::path run_dir =
      request.out.empty() ? fs::path("runs") / recipe.name() : fs::path(request.out);
  result.run_dir = run_dir;
  const std::string recipe_text = recipes::format_recipe(recipe);
  check_same_recipe(comm, recipe_text);
  check_batch_splits(comm, recipe);
  if (request.dry_run) return dry_run(recipe, comm_ptr, request, run_dir);
  const std::unique_ptr<DirectoryLock> run_lock = lock_run_directory(comm, run_dir);
  const std::optional<fs::path> latest =
      agree_on_resume(comm, run_dir, request.resume, recipe_text);

  std::optional<io::LogFileScope> log_file;
  if (root) {
    fs::create_directories(run_dir);
    log_file.emplace(run_dir / io::kTrainLogFile);
    io::log_info("rota train {} -> {} ({} threads{})", request.recipe, run_dir.string(), threads,
                 comm.world_size() > 1 ? fmt::format(" per rank, {}", comm.description()) : "");
    // Starting from step 0: metrics an earlier run logged here before it was killed, without a
    // checkpoint, would otherwise precede this run's and log its steps twice (a resume drops
    // the lines after its checkpoint the same way).
    if (!latest) io::truncate_metrics_after_step(run_dir / "metrics.jsonl", 0);
    for (const recipes::Issue& warning : recipes::recipe_warnings(recipe)) {
      io::log_warn("{}: {}", warning.path, warning.message);
    }
  }
  report_precision(matmul_precision());
  TrainingSetup setup = set_up_training(recipe, comm_ptr, latest, MemoryBudget{request.max_memory});
  if (root) {
    write_file_atomically(run_dir / io::kRecipeFile, recipe_text);
    setup.task->tokenizer().save(run_dir / "tokenizer");
    for (const auto& [name, bytes] : setup.task->data_files()) {
      write_file_atomically(run_dir / name, bytes);
    }
  }
  log_setup(recipe, setup, comm);

  train::TrainerOptions options =
      trainer_options_from_recipe(recipe, run_dir, setup.total_steps, recipe_text);
  options.stop_after_step = request.stop_after;
  options.base_weights = setup.base_weights;
  options.communicator = comm_ptr;
  options.on_step = request.on_step;
  options.progress_out = request.progress == ProgressMode::kNone ? nullptr : stdout;
  if (request.progress == ProgressMode::kPlain ||
      (request.progress == ProgressMode::kAuto &&
       (comm.world_size() > 1 || launched_by_mpirun()))) {
    // Open MPI gives ranks a pseudo-terminal even when mpirun's output goes to a file: a redrawn
    // line there would fill the file with carriage returns and escape codes.
    options.terminal = false;
  }
  train::Trainer trainer(*setup.task, *setup.optimizer, *setup.schedule, options);
  if (latest) trainer.resume(*latest);
  const train::TrainOutcome outcome = trainer.run();
  result.outcome = outcome;
  if (outcome.status == train::TrainStatus::kInterrupted) {
    if (root) {
      std::printf("stopped at step %lld/%lld; checkpoint %s; continue with: %s\n",
                  static_cast<long long>(outcome.step), static_cast<long long>(setup.total_steps),
                  outcome.last_checkpoint.c_str(),
                  resume_command(request, comm.world_size()).c_str());
      std::fflush(stdout);
    }
    return outcome.signal != 0 ? kExitFailure : kExitOk;
  }
  if (!root) return kExitOk;
  print_sample(recipe, *setup.task);
  std::string line = "split=valid";
  for (const auto& [name, value] : outcome.final_metrics) {
    line += fmt::format(" {}={:.6g}", name, value);
  }
  std::printf("%s step=%lld%s run=%s\n", line.c_str(), static_cast<long long>(outcome.step),
              outcome.stopped_early ? " stopped_early=true" : "", run_dir.c_str());
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

TrainResult train_recipe(const TrainRequest& request) {
  io::init_logging_from_env();
  remove_stale_temporary_directories();
  const std::shared_ptr<distributed::Communicator> comm = distributed::process_communicator();
  TrainResult result;
  result.exit_code = distributed::run_on_every_rank(
      *comm, [&] { return train_on_this_rank(request, comm, result); }, exit_code_of);
  return result;
}

int run_training(const TrainRequest& request) {
  return train_recipe(request).exit_code;
}

}  // namespace rota::app
