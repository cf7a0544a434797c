// Refusing a run whose estimated memory exceeds what the machine (or --max-memory) allows.
#pragma once

#include <cstdint>
#include <string>

#include "models/memory_estimate.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// How much memory a run may use.
struct MemoryBudget {
  int64_t limit_bytes = 0;  // > 0: this limit (--max-memory); 0: the memory available now
};

/// What the system can give this process now: MemAvailable of /proc/meminfo, lowered to the
/// cgroup's remaining memory.max when one is set; 0 when neither can be read.
int64_t available_memory_bytes();

/// "1.5 GB", "820 MB", "12 KB".
std::string format_bytes(double bytes);

/// Parses a --max-memory value: a number with an optional unit K, M, G or T (powers of 1024,
/// an optional trailing B or iB), e.g. "16G", "512MB", "2.5GiB". Throws RecipeError naming the
/// option when it is not one, or not positive.
int64_t parse_memory_size(const std::string& text, const std::string& option);

/// Throws recipes::RecipeError when `estimate` exceeds the budget, naming the recipe fields that
/// decide it and the parts of the estimate. `purpose` is "training" or "evaluation"; `tokens`
/// the batch × sequence length the activations are for.
void check_memory_budget(const models::MemoryEstimate& estimate, const MemoryBudget& budget,
                         const recipes::Recipe& recipe, const std::string& purpose, int64_t batch,
                         int64_t sequence_length);

}  // namespace rota::app
