// JSON Lines records: one JSON object per line, fields by key or dotted path.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "data/source/text_record.h"

namespace rota::data {

/// Parses one line of a JSON Lines file into a record (file/line set from the arguments).
/// Returns nullopt for a blank line (only whitespace), which is skipped. Errors name
/// file:line: text that is not JSON, a value that is not an object, a missing field, a text
/// field that is not a string, a label that is neither a string nor an integer. A field name
/// is looked up as a key first; failing that, a name with dots is a path through nested
/// objects ("meta.body" is obj["meta"]["body"]).
std::optional<TextRecord> parse_jsonl_line(std::string_view line, const RecordFields& fields,
                                           std::string_view file, int64_t line_number);

}  // namespace rota::data
