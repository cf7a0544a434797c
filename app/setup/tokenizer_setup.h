// Choosing a run's tokenizer: from a checkpoint, a saved file, the fine-tuning source, or built.
#pragma once

#include <map>
#include <string>

#include <filesystem>
#include <memory>
#include <optional>

#include "data/corpus/data_options.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// The build options data.tokenizer asks for. Masked LMs and classifiers get <pad>, <mask>,
/// <cls> and <sep> on top of the kind's defaults (a classifier reuses its masked LM's
/// tokenizer, so both have them).
data::TokenizerSpec tokenizer_spec_from_recipe(const recipes::Recipe& recipe);

/// The tokenizer of a run, first match wins:
///   1. `checkpoint_dir` (resume, eval, generate): the tokenizer saved in it;
///   2. data.prepared: the prepared directory's tokenizer (prepared_setup.h);
///   3. data.tokenizer.path: a tokenizer saved earlier;
///   4. finetune.init_from: the pretrained checkpoint's tokenizer;
///   5. built from the training split as data.tokenizer says.
std::shared_ptr<const data::Tokenizer> obtain_tokenizer(
    const recipes::Recipe& recipe, const std::optional<std::filesystem::path>& checkpoint_dir,
    const data::DataOptions& data_options);

/// tokenizer_files and tokenizer_from_files go through a scratch directory $TMPDIR/PREFIX-PID-N
/// (ScratchDirectory), removed on every exit path; one a killed process left is removed at the
/// next start (app/run/temp_cleanup.h).
inline constexpr char kTokenizerScratchPrefix[] = "rota-tokenizer";

/// The files a tokenizer saves (tokenizer.json and maybe vocab.txt / spm.model), name → bytes:
/// what checkpoints keep and what rank 0 sends to the other ranks.
std::map<std::string, std::string> tokenizer_files(const data::Tokenizer& tokenizer);

/// The tokenizer those files describe (the inverse of tokenizer_files).
std::shared_ptr<const data::Tokenizer> tokenizer_from_files(
    const std::map<std::string, std::string>& files);

}  // namespace rota::app
