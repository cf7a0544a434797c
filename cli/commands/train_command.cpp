// `rota train RECIPE [--set a.b=v]... [--out DIR] [--resume]`: a recipe → a trained run directory.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands/commands.h"
#include "cli/jobs/checkpoint_task.h"
#include "cli/jobs/finetune_setup.h"
#include "cli/jobs/optimizer_setup.h"
#include "cli/jobs/precision_setup.h"
#include "cli/jobs/tasks.h"
#include "cli/jobs/tokenizer_setup.h"
#include "framework/distributed/launch.h"
#include "framework/distributed/run_guard.h"
#include "framework/io/atomic_file.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/io/log.h"
#include "models/generation.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

namespace fs = std::filesystem;

namespace rota::cli {
namespace {

// The first line where two recipe texts differ, for the resume mismatch message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  int line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(sa, la));
    const bool more_b = static_cast<bool>(std::getline(sb, lb));
    ++line;
    if (!more_a && !more_b) return "";
    if (!more_a) la = "(end)";
    if (!more_b) lb = "(end)";
    if (la != lb) return fmt::format("line {}: checkpoint has `{}`, now `{}`", line, la, lb);
  }
}

train::TrainerOptions trainer_options(const recipes::Recipe& recipe, const fs::path& run_dir,
                                      int64_t total_steps, const std::string& recipe_text) {
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
  return o;
}

void print_sample(const recipes::Recipe& recipe, Task& task) {
  auto* causal = dynamic_cast<CausalLmTask*>(&task);
  if (!causal || !recipe.train().has_sample()) return;
  const recipes::Sample& s = recipe.train().sample();
  models::GenerationOptions options;
  options.tokens = s.tokens();
  options.temperature = s.temperature();
  options.top_k = s.top_k();
  options.seed = recipe.train().seed();
  causal->model().eval();
  const std::vector<int64_t> prompt = task.tokenizer().encode(s.prompt());
  // Line-based tokenizers end every encoded line with <eos>; a prompt is a line being written.
  std::vector<int64_t> ids = prompt;
  const auto& specials = task.tokenizer().specials();
  if (!ids.empty() && specials.has(data::SpecialToken::kEos) &&
      ids.back() == specials.id(data::SpecialToken::kEos) && ids.size() > 1) {
    ids.pop_back();
  }
  const std::vector<int64_t> generated = models::generate(causal->causal_lm(), ids, options);
  std::vector<int64_t> all = ids;
  all.insert(all.end(), generated.begin(), generated.end());
  std::printf("---- sample (temperature %.2g, top-k %lld, seed %llu) ----\n%s\n----\n",
              s.temperature(), static_cast<long long>(s.top_k()),
              static_cast<unsigned long long>(recipe.train().seed()),
              task.tokenizer().decode(all).c_str());
  std::fflush(stdout);
}

// 2 for recipe and usage errors, 1 for everything else (the exit-code contract of main).
int exit_code_of(const std::exception& error) {
  return dynamic_cast<const recipes::RecipeError*>(&error) != nullptr ? kExitUsage : kExitFailure;
}

// Refuses the run on every rank at once; only for conditions every rank decides alike. One
// process: a RecipeError as always. Data-parallel: a CollectiveError with exit code 2, which rank 0
// prints once and every rank returns (no MPI_Abort for a mistake in the command line).
[[noreturn]] void refuse(const distributed::Communicator& comm, const std::string& message) {
  if (comm.world_size() == 1) throw recipes::RecipeError(message);
  throw distributed::CollectiveError(message, kExitUsage);
}

// The recipe, loaded on every rank. A recipe error that every rank hits (a typo in the recipe or
// a --set) is refused once like any recipe error; one that only some ranks hit (their files
// differ) ends the job through the failure guard.
recipes::Recipe load_recipe_on_every_rank(distributed::Communicator& comm, const TrainArgs& args) {
  if (comm.world_size() == 1) return recipes::load_recipe(args.recipe, args.overrides);
  recipes::Recipe recipe;
  std::string error;
  try {
    recipe = recipes::load_recipe(args.recipe, args.overrides);
  } catch (const recipes::RecipeError& e) {
    error = e.what();
  }
  const int64_t failed = error.empty() ? 0 : 1;
  int64_t failures = failed;
  comm.allreduce_sum(std::span<int64_t>(&failures, 1));
  if (failures == comm.world_size()) refuse(comm, error);
  if (failed) throw recipes::RecipeError(error);
  return recipe;
}

// Every rank must train the same recipe: different files or overrides on different machines
// would silently train different models.
void check_same_recipe(distributed::Communicator& comm, const std::string& recipe_text) {
  if (comm.world_size() == 1) return;
  const int64_t differs = distributed::broadcast_string(comm, recipe_text) != recipe_text;
  const std::vector<int64_t> all =
      distributed::allgather(comm, std::span<const int64_t>(&differs, 1));
  std::string ranks;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] != 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!ranks.empty()) {
    refuse(comm, fmt::format("the recipe resolves differently on rank(s) {} than on rank 0 (a "
                             "different recipe file or --set on their machine); every rank must "
                             "run the same recipe",
                             ranks));
  }
}

// Files as one string: for each, "<name>\n<size>\n<bytes>".
std::string pack_files(const std::map<std::string, std::string>& files) {
  std::string packed;
  for (const auto& [name, bytes] : files) {
    packed += name + "\n" + std::to_string(bytes.size()) + "\n" + bytes;
  }
  return packed;
}

std::map<std::string, std::string> unpack_files(const std::string& packed) {
  std::map<std::string, std::string> files;
  size_t at = 0;
  while (at < packed.size()) {
    const size_t name_end = packed.find('\n', at);
    const size_t size_end = packed.find('\n', name_end + 1);
    ROTA_CHECK(name_end != std::string::npos && size_end != std::string::npos,
               "distributed: malformed tokenizer files from rank 0");
    const std::string name = packed.substr(at, name_end - at);
    const size_t size = std::stoull(packed.substr(name_end + 1, size_end - name_end - 1));
    files[name] = packed.substr(size_end + 1, size);
    at = size_end + 1 + size;
  }
  return files;
}

// The tokenizer of every rank: rank 0 obtains it (loads or builds it) and sends its files to the
// others, so all ranks hold the same vocabulary and only one builds it.
std::shared_ptr<const data::Tokenizer> shared_tokenizer(distributed::Communicator& comm,
                                                        const recipes::Recipe& recipe,
                                                        const std::optional<fs::path>& latest,
                                                        const data::DataOptions& data_options) {
  if (comm.world_size() == 1) return obtain_tokenizer(recipe, latest, data_options);
  const fs::path dir =
      fs::temp_directory_path() / fmt::format("rota-tokenizer-{}-rank{}", ::getpid(), comm.rank());
  fs::remove_all(dir);
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::string packed;
  if (comm.rank() == 0) {
    tokenizer = obtain_tokenizer(recipe, latest, data_options);
    tokenizer->save(dir);
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      files[entry.path().filename().string()] = io::read_file(entry.path());
    }
    packed = pack_files(files);
  }
  packed = distributed::broadcast_string(comm, packed);
  if (comm.rank() != 0) {
    fs::create_directories(dir);
    for (const auto& [name, bytes] : unpack_files(packed)) {
      io::write_file_atomically(dir / name, bytes);
    }
    tokenizer = data::load_tokenizer(dir);
  }
  fs::remove_all(dir);
  return tokenizer;
}

// mpirun binds each rank to one core by default (for 2 ranks or fewer), which would stack all of
// a rank's threads on that core.
void warn_about_core_binding(const distributed::Communicator& comm, int threads) {
  cpu_set_t cpus;
  if (comm.world_size() == 1 || sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return;
  const int allowed = CPU_COUNT(&cpus);
  if (allowed < threads) {
    io::log_warn(
        "rank {}: {} threads but only {} core(s) allowed to this process; start mpirun with "
        "--bind-to none, or --map-by slot:PE={} to give each rank its cores",
        comm.rank(), threads, allowed, threads);
  }
}

int train_on_this_rank(const TrainArgs& args,
                       const std::shared_ptr<distributed::Communicator>& comm_ptr) {
  distributed::Communicator& comm = *comm_ptr;
  const bool root = comm.rank() == 0;
  // The other ranks only report problems; rank 0 tells the story.
  if (!root && io::log_level() < io::LogLevel::kWarn) io::set_log_level(io::LogLevel::kWarn);
  recipes::Recipe recipe = load_recipe_on_every_rank(comm, args);
  // train.dtype holds for the whole run on this rank (training steps, validation, the sample);
  // every rank loads the same recipe, so all compute alike.
  const MatmulPrecisionGuard precision(precision_from_recipe(recipe));
  const int threads = apply_thread_setting(recipe);
  warn_about_core_binding(comm, threads);
  const fs::path run_dir = args.out.empty() ? fs::path("runs") / recipe.name() : fs::path(args.out);
  const std::string recipe_text = recipes::format_recipe(recipe);
  check_same_recipe(comm, recipe_text);
  const int64_t batch = recipe.data().batch_size();
  const int64_t accumulation = recipe.train().gradient_accumulation();
  if (batch % (accumulation * comm.world_size()) != 0) {
    refuse(comm,
           fmt::format("data.batch_size: {} sequences (the global batch) do not split "
                       "evenly into train.gradient_accumulation {} x {} ranks; use a "
                       "multiple of {} or another number of ranks",
                       batch, accumulation, comm.world_size(), accumulation * comm.world_size()));
  }

  // Rank 0 looks at the run directory and decides; the others follow its answer.
  std::string latest_text, refusal;
  if (root) {
    const std::optional<fs::path> found =
        fs::exists(run_dir) ? io::find_latest(run_dir) : std::nullopt;
    if (found && !args.resume) {
      refusal = fmt::format(
          "{} already holds a run (latest checkpoint {}); pass --resume to continue it, or --out "
          "DIR to start a new run elsewhere",
          run_dir.string(), found->string());
    } else if (found) {
      const io::Checkpoint saved = io::load_checkpoint(*found);
      if (saved.recipe_text != recipe_text) {
        refusal = fmt::format(
            "--resume: the recipe differs from the one {} was trained with ({}); resume with the "
            "same recipe and --set overrides",
            found->string(), first_difference(saved.recipe_text, recipe_text));
      }
    } else if (args.resume) {
      io::log_info("--resume: {} has no checkpoint yet; starting from scratch", run_dir.string());
    }
    if (found) latest_text = found->string();
  }
  refusal = distributed::broadcast_string(comm, refusal);
  if (!refusal.empty()) refuse(comm, refusal);
  latest_text = distributed::broadcast_string(comm, latest_text);
  const std::optional<fs::path> latest =
      latest_text.empty() ? std::nullopt : std::optional<fs::path>(latest_text);

  if (root) {
    fs::create_directories(run_dir);
    io::set_log_file(run_dir / "train.log");
    io::log_info("rota train {} -> {} ({} threads{})", args.recipe, run_dir.string(), threads,
                 comm.world_size() > 1 ? fmt::format(" per rank, {}", comm.description()) : "");
  }
  report_precision(matmul_precision());

  TaskInputs inputs;
  inputs.recipe = recipe;
  inputs.communicator = comm_ptr;
  inputs.tokenizer = shared_tokenizer(comm, recipe, latest, inputs.data_options);
  std::unique_ptr<Task> task = make_task(std::move(inputs));
  nn::Module& model = task->model();
  if (latest) {
    // Weights come from the checkpoint; only the frozen set must be re-applied.
    if (recipe.has_finetune() && recipe.finetune().freeze_size() > 0) {
      freeze_parameters(model,
                        {recipe.finetune().freeze().begin(), recipe.finetune().freeze().end()});
    }
  } else {
    apply_finetune(recipe, model);
  }
  if (root) {
    io::write_file_atomically(run_dir / io::kRecipeFile, recipe_text);
    task->tokenizer().save(run_dir / "tokenizer");
  }

  const int64_t total_steps =
      total_steps_from_recipe(recipe, recipe.train().has_epochs() ? task->steps_per_epoch() : 1);
  const std::unique_ptr<optim::Optimizer> optimizer = optimizer_from_recipe(recipe, model);
  const std::unique_ptr<optim::LrSchedule> schedule =
      optim::make_schedule(schedule_options_from_recipe(recipe, total_steps));
  int64_t trainable = 0;
  for (const auto& p : model.parameters()) trainable += p.requires_grad() ? p.data().numel() : 0;
  io::log_info(
      "model: {} parameters ({} trainable); vocabulary {}; {} steps of {} sequences x {} tokens",
      model.num_parameters(), trainable, task->tokenizer().vocab_size(), total_steps,
      recipe.data().batch_size(), recipe.data().sequence_length());
  if (comm.world_size() > 1) {
    io::log_info("data-parallel: {} ranks x {} micro-batches x {} sequences = {} per step",
                 comm.world_size(), accumulation, task->micro_batch_size(), batch);
  }

  train::TrainerOptions options = trainer_options(recipe, run_dir, total_steps, recipe_text);
  options.stop_after_step = args.stop_after;
  options.communicator = comm_ptr;
  train::Trainer trainer(*task, *optimizer, *schedule, options);
  if (latest) trainer.resume(*latest);
  const train::TrainOutcome outcome = trainer.run();
  if (outcome.status == train::TrainStatus::kInterrupted) {
    if (root) {
      std::string again = "rota train " + args.recipe;
      for (const std::string& o : args.overrides) again += " --set '" + o + "'";
      if (!args.out.empty()) again += " --out " + args.out;
      if (comm.world_size() > 1) again = fmt::format("mpirun -np {} {}", comm.world_size(), again);
      std::printf("stopped at step %lld/%lld; checkpoint %s; continue with: %s --resume\n",
                  static_cast<long long>(outcome.step), static_cast<long long>(total_steps),
                  outcome.last_checkpoint.c_str(), again.c_str());
      std::fflush(stdout);
    }
    return outcome.signal != 0 ? kExitFailure : kExitOk;
  }
  if (!root) return kExitOk;
  print_sample(recipe, *task);
  std::string line = "split=valid";
  for (const auto& [name, value] : outcome.final_metrics)
    line += fmt::format(" {}={:.6g}", name, value);
  std::printf("%s step=%lld run=%s\n", line.c_str(), static_cast<long long>(outcome.step),
              run_dir.c_str());
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

int run_train(const TrainArgs& args) {
  io::init_logging_from_env();
  // MPI when started by mpirun with several processes, else this process alone.
  const std::shared_ptr<distributed::Communicator> comm = distributed::process_communicator();
  return distributed::run_on_every_rank(
      *comm, [&] { return train_on_this_rank(args, comm); }, exit_code_of);
}

}  // namespace rota::cli
