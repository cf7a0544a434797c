// `rota generate`: text sampled from a causal LM checkpoint, streamed as it is produced.
#pragma once

#include <cstdint>
#include <string>

namespace rota::app {

struct GenerateRequest {
  std::string checkpoint;  // run directory or checkpoint directory
  std::string prompt;
  int64_t tokens = 200;
  double temperature = 0.8;  // 0: greedy
  int64_t top_k = 0;         // 0: all tokens
  uint64_t seed = 0;
};

/// Prints the prompt and its continuation. Refuses (exit code 2) negative settings, a prompt
/// that encodes to nothing and a checkpoint that is not a causal LM. Returns the exit code.
int run_generation(const GenerateRequest& request);

}  // namespace rota::app
