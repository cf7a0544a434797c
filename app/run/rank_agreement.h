// What every rank of a data-parallel `rota train` must agree on before training starts.
#pragma once

#include <string>
#include <vector>

#include "framework/distributed/communicator.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// Refuses the run on every rank at once; only for conditions every rank decides alike. One
/// process: a RecipeError as always. Data-parallel: a CollectiveError with exit code 2, which
/// rank 0 prints once and every rank returns (no MPI_Abort for a mistake in the command line).
[[noreturn]] void refuse_on_every_rank(const distributed::Communicator& comm,
                                       const std::string& message);

/// The recipe, loaded on every rank. A recipe error that every rank hits (a typo in the recipe
/// or a --set) is refused once like any recipe error; one that only some ranks hit (their files
/// differ) ends the job through the failure guard.
recipes::Recipe load_recipe_on_every_rank(distributed::Communicator& comm,
                                          const std::string& recipe_file,
                                          const std::vector<std::string>& overrides);

/// Every rank must train the same recipe: different files or overrides on different machines
/// would silently train different models. Refuses, naming the ranks that differ from rank 0.
void check_same_recipe(distributed::Communicator& comm, const std::string& recipe_text);

/// data.batch_size must split evenly into gradient_accumulation × ranks micro-batches.
void check_batch_splits(const distributed::Communicator& comm, const recipes::Recipe& recipe);

/// Warns when mpirun bound this rank to fewer cores than it runs threads.
void warn_about_core_binding(const distributed::Communicator& comm, int threads);

}  // namespace rota::app
