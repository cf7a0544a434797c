// Cutting one text into train/valid/test by character (code point) percentages.
#pragma once

#include <string_view>
#include <utility>

namespace rota::data {

/// The characters [n * percent_begin / 100, n * percent_end / 100) of text, where n is its
/// number of characters (UTF-8 code points; a stray byte counts as one) and the divisions
/// round down. Consecutive ranges (0-90, 90-95, 95-100) partition the text exactly.
std::string_view cut_by_characters(std::string_view text, int percent_begin, int percent_end);

/// Splits text into (head, tail) by characters, the tail holding the last `fraction` of them:
/// head = the first floor(n * (1 - fraction)) characters. For a validation split held out of
/// a training text (fraction in [0, 1]).
std::pair<std::string_view, std::string_view> hold_out_tail(std::string_view text, double fraction);

}  // namespace rota::data
