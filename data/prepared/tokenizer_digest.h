// The identity of a tokenizer: sha256 over the files Tokenizer::save writes.
#pragma once

#include <filesystem>
#include <string>

#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// sha256 over the regular files of a saved tokenizer directory, in name order: for each,
/// "<name>\0<size>\0<bytes>". Two tokenizers with equal digests encode identically.
std::string tokenizer_dir_digest(const std::filesystem::path& dir);
/// The digest of the files tokenizer.save() writes (saved into a scratch directory
/// $TMPDIR/PREFIX-PID-N, removed on every exit path; stale ones go at the next start).
inline constexpr char kTokenizerDigestScratchPrefix[] = "rota-digest";
std::string tokenizer_digest(const Tokenizer& tokenizer);

}  // namespace rota::data
