// Character-percentage cuts of a text.
#include "data/corpus/text_split.h"

#include <cmath>
#include <cstdint>

#include "data/util/utf8.h"
#include "framework/base/error.h"

namespace rota::data {

std::string_view cut_by_characters(std::string_view text, int percent_begin, int percent_end) {
  ROTA_CHECK(0 <= percent_begin && percent_begin <= percent_end && percent_end <= 100,
             "cut_by_characters: bad percent range [{}, {})", percent_begin, percent_end);
  const int64_t n = utf8_unit_count(text);
  const int64_t begin_char = n * percent_begin / 100;
  const int64_t end_char = n * percent_end / 100;
  const size_t begin = utf8_unit_offset(text, begin_char);
  const size_t end = begin + utf8_unit_offset(text.substr(begin), end_char - begin_char);
  return text.substr(begin, end - begin);
}

std::pair<std::string_view, std::string_view> hold_out_tail(std::string_view text,
                                                            double fraction) {
  ROTA_CHECK(fraction >= 0 && fraction <= 1, "hold_out_tail: fraction {} is not in [0, 1]",
             fraction);
  const int64_t n = utf8_unit_count(text);
  const auto head_chars =
      static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - fraction)));
  const size_t split = utf8_unit_offset(text, head_chars);
  return {text.substr(0, split), text.substr(split)};
}

}  // namespace rota::data
