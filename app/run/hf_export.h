// `rota export hf`: a run's checkpoint as a Hugging Face-style directory that rota.torch loads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace rota::app {

/// One file carried inside the binary (name without directory, text).
struct EmbeddedTextFile {
  const char* name;
  std::string_view text;
};

/// The sources of the `rota.torch` Python package (python/rota/torch/*.py), embedded at build
/// time (cmake/EmbedTextFiles.cmake), written next to an export as its modeling code.
std::span<const EmbeddedTextFile> rota_torch_sources();

struct HfExportResult {
  std::filesystem::path checkpoint;  // the checkpoint that was exported
  std::filesystem::path out;
  bool tokenizer_json = false;  // tokenizer.json written (the tokenizer has an HF form)
  std::string note;             // why there is no tokenizer.json, when there is none
  int64_t merged_adapters = 0;  // layers whose low-rank adapters were folded into the weights
};

/// Writes OUT = { config.json, model.safetensors, tokenizer.json (when the run's tokenizer can
/// be expressed as one), rota_tokenizer/ (Rota's own tokenizer files), the rota.torch sources
/// with modeling_rota.py }. The checkpoint is verified (sizes, CRCs) first; OUT must not exist
/// or be an empty directory; files are written into a temporary directory renamed into place.
HfExportResult export_hf(const std::filesystem::path& run_or_checkpoint,
                         const std::filesystem::path& out);

/// The CLI entry: prints what was written; returns an exit code (app/run/exit_codes.h).
int run_hf_export(const std::string& run_or_checkpoint, const std::string& out);

}  // namespace rota::app
