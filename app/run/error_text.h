// What a user reads for a failure: Rota's own messages as they are, a library's in Rota's words.
#pragma once

#include <exception>
#include <string>

namespace rota::app {

/// The message for `error`. Rota's errors (rota::Error, RecipeError) are returned as they are.
/// A file-system error that reached the top unannotated says what could not be done to which
/// path and why, with a hint for the common causes (a symbolic link loop, no permission or a
/// read-only file system, a full disk, something else changing the place meanwhile); a JSON
/// library error drops the library's "[json.exception.…]" tag. Anything else: its what().
std::string error_text(const std::exception& error);

}  // namespace rota::app
