// Opening a tokenizer by path: a directory saved by Rota, a directory or file holding a
// Hugging Face tokenizer.json, or a SentencePiece .model file.
#pragma once

#include <filesystem>
#include <memory>

#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// Accepts: a directory written by Tokenizer::save (Rota's tokenizer.json, or a Hugging Face
/// one); a directory with a Hugging Face tokenizer.json; a *.json file (Hugging Face's format,
/// or Rota's with its companion files beside it); a SentencePiece *.model file. Throws
/// rota::Error "not a tokenizer: <path>: <why>" for anything else.
std::unique_ptr<Tokenizer> open_tokenizer(const std::filesystem::path& path);

}  // namespace rota::data
