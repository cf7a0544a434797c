// `--set` overrides ("a.b=v", "a.b=[x,y]", "a.b+=x", "a.b={...}") applied through reflection.
#pragma once

#include <string>
#include <string_view>

#include <google/protobuf/message.h>

namespace rota::recipes {

/// Applies one override to `root` and returns the dotted path it set.
///
/// Syntax (whitespace around the path and the value is ignored):
/// - `a.b.c=value`  sets a singular field. Every middle name must be a singular message field;
///   it is created when absent, and when it is a member of a oneof it becomes the selected
///   member (the other members are cleared). Values: integers (range-checked; `1e4` is accepted
///   when it is a whole number), reals, `true`/`false` (or 1/0), enum names (case-insensitive),
///   strings (as written, or quoted with C escapes: `"\n"`).
/// - `a.b={ text }`  replaces a message field by the text-format message between the braces
///   (`{}` makes it present and empty, e.g. `model.position.none={}` selects NoPE).
/// - `a.b=[x, y]`  replaces a repeated field by the list (`[]` empties it); elements are values
///   as above, or `{ ... }` for repeated messages; quote strings that contain `,` `[` `]`.
/// - `a.b+=x`  appends one element to a repeated field.
/// A repeated field needs `[...]` or `+=`; `+=` needs a repeated field.
/// Throws RecipeError("--set TEXT: field.path: what") for unknown names (with a suggestion),
/// a value of the wrong type or out of range, or malformed syntax.
/// - `!a.b` (what `--unset a.b` passes): the field back to its default; a message field (a
///   section such as `finetune`, or a oneof member) becomes absent.
std::string apply_override(google::protobuf::Message& root, std::string_view text);

/// The mark that makes an override an unset: `std::string(1, kUnsetMark) + path`.
inline constexpr char kUnsetMark = '!';

/// How an override reads in messages: "--set a.b=v" or "--unset a.b".
std::string override_display(std::string_view text);

}  // namespace rota::recipes
