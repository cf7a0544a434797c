// Turning a user's prompt into the token ids generation continues from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"

namespace rota::app {

/// The prompt's ids. Line-based tokenizers close every encoded line with <eos>; a prompt is a
/// line still being written, so a trailing <eos> is dropped (unless it is the only token).
std::vector<int64_t> encode_prompt(const data::Tokenizer& tokenizer, const std::string& prompt);

}  // namespace rota::app
