// UTF-8 scanning: character units (a valid code point, or one stray byte) and char offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rota::data {

/// Length in bytes of the character unit starting at text[pos]: the length of a well-formed
/// UTF-8 sequence (1-4; no overlongs, surrogates or values above U+10FFFF), or 1 for a byte
/// that does not start one. Every byte string is thus a sequence of units, and joining the
/// units gives back the exact bytes.
size_t utf8_unit_length(std::string_view text, size_t pos);

/// Whether text is well-formed UTF-8 (every unit a code point, no stray byte).
bool is_valid_utf8(std::string_view text);

/// Number of character units in text.
int64_t utf8_unit_count(std::string_view text);

/// Byte offset of the unit with the given index (index == count gives text.size()).
size_t utf8_unit_offset(std::string_view text, int64_t index);

}  // namespace rota::data
