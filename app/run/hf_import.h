// `rota import hf`: a Hugging Face GPT-2 or Llama-family checkpoint as a Rota run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rota::app {

struct HfImportRequest {
  std::filesystem::path source;  // config.json, model.safetensors (or an index), tokenizer.json
  std::filesystem::path out;     // the run directory to write (must not hold a run)
  /// --set / --unset applied to the recipe the import writes (recipes::kUnsetMark + PATH for an
  /// unset), e.g. data.corpus or data.sequence_length.
  std::vector<std::string> overrides;
};

struct HfImportResult {
  std::string architecture;           // config.json's architectures[0]
  std::filesystem::path checkpoint;   // OUT/checkpoints/step_000000
  int64_t parameters = 0;             // tensors' elements written
  int64_t tensors_read = 0;           // tensors read from the source's safetensors files
  std::vector<std::string> ignored;   // source tensors that are not weights (causal-mask buffers)
  std::vector<std::string> warnings;  // settings Rota approximates (e.g. one dropout for two)
};

/// Reads `request.source` and writes a Rota run at `request.out`: RUN/recipe.txtpb (a causal LM
/// with softmax attention that computes what the source computes), RUN/tokenizer/ and a
/// checkpoint at step 0 holding the weights and the tokenizer, which `rota eval`, `generate`,
/// `predict`, `export hf` and `finetune.init_from` use. Architectures: GPT2LMHeadModel and the
/// Llama family (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM). Weights are streamed
/// from the safetensors files (one tensor at a time, converted to float32) into the model, so the
/// peak memory is the float32 model plus one tensor. Throws rota::Error naming the problem: an
/// architecture or config field Rota does not know or cannot compute, a missing, misshapen or
/// unexpected tensor, a vocabulary that differs from the tokenizer's, a RUN that already holds
/// a run.
HfImportResult import_hf(const HfImportRequest& request);

/// The CLI entry: prints what was written; returns an exit code (app/run/exit_codes.h).
int run_hf_import(const HfImportRequest& request);

}  // namespace rota::app
