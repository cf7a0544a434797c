// `rota generate`: text sampled from a causal LM checkpoint, streamed as it is produced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rota::app {

struct GenerateRequest {
  std::string checkpoint;    // run directory or checkpoint directory
  std::string prompt;        // one prompt (--prompt) …
  std::string prompts_file;  // … or a file of prompts, one per line (--prompts)
  int64_t tokens = 200;
  double temperature = 0.8;         // 0: greedy
  int64_t top_k = 0;                // 0: all tokens
  double top_p = 1.0;               // nucleus sampling, 0 < p <= 1; 1: off
  double repetition_penalty = 1.0;  // > 0; 1: off
  std::vector<std::string> stops;   // stop strings
  bool stop_at_eos = false;
  int64_t samples = 1;          // continuations per prompt
  std::string format = "text";  // text or jsonl
  uint64_t seed = 0;
};

/// The prompts of a --prompts file: one per line (UTF-8; a final line break and a line's
/// trailing "\r" are not part of it). An unreadable file, an empty line or bytes that are not
/// UTF-8 are a RecipeError naming the file (and line).
std::vector<std::string> read_prompts_file(const std::string& path);

/// One prompt and one sample in the text format: prints the prompt and its continuation as it is
/// generated (cut before a stop string), then a line break. Several prompts or samples: each
/// continuation, in prompt order then sample order, as a JSON Lines record (format jsonl:
/// {"prompt": line, "sample": i, "text", "tokens", "stopped_by"[, "stop"]}) or as a block headed
/// "==> prompt P, sample S <==" (format text). Refuses (exit code 2) settings out of range, a
/// prompt that encodes to nothing and a checkpoint that is not a causal LM. Returns the exit code.
int run_generation(const GenerateRequest& request);

}  // namespace rota::app
