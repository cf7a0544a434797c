// Checkpoints: weights, optimizer state, train state and recipe in one crash-safe directory.
//
//   checkpoints/step_000500/model.safetensors      parameters and buffers (PyTorch-style names)
//                           optimizer.safetensors  Optimizer::state_tensors()
//                           state.binpb            TrainState, with size + CRC of every file
//                           recipe.txtpb           the resolved recipe (text, opaque to io)
//                           <extra files>          e.g. the tokenizer
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "framework/io/safetensors.h"
#include "framework/io/train_state.h"
#include "framework/tensor/state_dict.h"

namespace rota::io {

inline constexpr char kModelFile[] = "model.safetensors";
inline constexpr char kOptimizerFile[] = "optimizer.safetensors";
inline constexpr char kStateFile[] = "state.binpb";
inline constexpr char kRecipeFile[] = "recipe.txtpb";

/// Everything a checkpoint holds.
struct Checkpoint {
  StateDict model;          // Module::state_dict()
  NamedTensors optimizer;   // Optimizer::state_tensors()
  TrainState state;         // step, tokens, RNG streams, data cursor... (files/crc: set on save)
  std::string recipe_text;  // the resolved recipe in text format
  /// More files to keep with the checkpoint, file name -> bytes (e.g. "tokenizer.model").
  std::map<std::string, std::string> extra_files;
};

struct CheckpointSaveOptions {
  /// Step directories to keep (newest by step); 0 keeps all. The directory just written and
  /// the ones `latest` and `best` point at are never deleted.
  int keep_last = 3;
  /// Also point checkpoints/best at this checkpoint.
  bool is_best = false;
  /// Extra "__metadata__" entries for model.safetensors (e.g. a hash of the recipe).
  SafetensorsMetadata model_metadata;
};

/// Writes RUN/checkpoints/step_<state.step>/ and returns its path. Nothing the run already had
/// is lost if the process dies at any point: files go into step_N.tmp/ (each fsynced), the
/// directory is fsynced and renamed into place (atomically exchanged with an existing step_N),
/// and only then is `latest` (and `best`) rewritten atomically; finally old directories are
/// pruned per `options.keep_last`.
std::filesystem::path save_checkpoint(const std::filesystem::path& run_dir,
                                      const Checkpoint& checkpoint,
                                      const CheckpointSaveOptions& options = {});

/// Reads a checkpoint directory (see resolve_checkpoint / find_latest to get one). Refuses,
/// naming the file and the problem: a missing file, a state.binpb that is truncated or corrupted
/// (its own checksum), a file whose size or CRC-32C differs from what state.binpb recorded
/// (truncated, corrupted, or mixed in from another checkpoint), and any safetensors problem.
Checkpoint load_checkpoint(const std::filesystem::path& checkpoint_dir);

}  // namespace rota::io
