// The tokenizer of every rank of a run: rank 0 obtains it, the others receive its files.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "data/corpus/data_options.h"
#include "data/tokenizer/tokenizer.h"
#include "framework/distributed/communicator.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// obtain_tokenizer on rank 0, its files broadcast to the other ranks, so every rank holds the
/// same vocabulary and only one builds it. One process: obtain_tokenizer.
std::shared_ptr<const data::Tokenizer> shared_tokenizer(
    distributed::Communicator& comm, const recipes::Recipe& recipe,
    const std::optional<std::filesystem::path>& checkpoint_dir,
    const data::DataOptions& data_options);

/// Files as one string ("<name>\n<size>\n<bytes>" each) and back; unpack throws on a malformed
/// string.
std::string pack_files(const std::map<std::string, std::string>& files);
std::map<std::string, std::string> unpack_files(const std::string& packed);

}  // namespace rota::app
