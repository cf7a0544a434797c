// Recipe, batch and core-binding agreement across the ranks of a data-parallel run.
#include "app/run/rank_agreement.h"

#include <sched.h>

#include <fmt/format.h>

#include "app/run/exit_codes.h"
#include "app/setup/finetune_setup.h"
#include "app/tasks/task.h"
#include "framework/distributed/launch.h"
#include "framework/io/log.h"
#include "recipes/loader.h"
#include "recipes/recipe_error.h"

namespace rota::app {

void refuse_on_every_rank(const distributed::Communicator& comm, const std::string& message) {
  if (comm.world_size() == 1) throw recipes::RecipeError(message);
  throw distributed::CollectiveError(message, kExitUsage);
}

recipes::Recipe load_recipe_on_every_rank(distributed::Communicator& comm,
                                          const std::string& recipe_file,
                                          const std::vector<std::string>& overrides) {
  if (comm.world_size() == 1) return recipes::load_recipe(recipe_file, overrides, pretrained_model);
  recipes::Recipe recipe;
  std::string error;
  try {
    recipe = recipes::load_recipe(recipe_file, overrides, pretrained_model);
  } catch (const recipes::RecipeError& e) {
    error = e.what();
  }
  const int64_t failed = error.empty() ? 0 : 1;
  int64_t failures = failed;
  comm.allreduce_sum(std::span<int64_t>(&failures, 1));
  if (failures == comm.world_size()) refuse_on_every_rank(comm, error);
  if (failed) throw recipes::RecipeError(error);
  return recipe;
}

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
    refuse_on_every_rank(
        comm, fmt::format("the recipe resolves differently on rank(s) {} than on rank 0 (a "
                          "different recipe file or --set on their machine); every rank must "
                          "run the same recipe",
                          ranks));
  }
}

void check_batch_splits(const distributed::Communicator& comm, const recipes::Recipe& recipe) {
  const std::string problem = batch_split_problem(recipe, comm.world_size());
  if (!problem.empty()) refuse_on_every_rank(comm, problem);
}

void warn_about_core_binding(const distributed::Communicator& comm, int threads) {
  // mpirun binds each rank to one core by default (for 2 ranks or fewer), which would stack
  // all of a rank's threads on that core.
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

}  // namespace rota::app
