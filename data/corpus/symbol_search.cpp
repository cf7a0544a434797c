// Locating characters in corpus splits (file:line:column).
#include "data/corpus/symbol_search.h"

#include <fmt/format.h>

#include "data/source/line_stream.h"
#include "data/util/utf8.h"

namespace rota::data {

namespace {

// The first unknown unit of `text`, which starts at (line, 1); advances over line breaks.
std::optional<SymbolLocation> search_text(std::string_view text, int64_t line,
                                          const std::function<bool(std::string_view)>& unknown) {
  int64_t column = 1;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_unit_length(text, pos);
    const std::string_view unit = text.substr(pos, length);
    if (unit == "\n") {
      ++line;
      column = 1;
    } else {
      if (unknown(unit)) {
        SymbolLocation location;
        location.line = line;
        location.column = column;
        location.character = std::string(unit);
        return location;
      }
      ++column;
    }
    pos += length;
  }
  return std::nullopt;
}

}  // namespace

std::string SymbolLocation::where() const {
  std::string text = fmt::format("{}:{}:{}", file, line, column);
  if (!field.empty()) text += fmt::format(" (in field '{}')", field);
  return text;
}

std::string describe_symbol(std::string_view character) {
  if (character.size() == 1 && static_cast<unsigned char>(character[0]) >= 0x80) {
    return fmt::format("byte 0x{:02X}", static_cast<unsigned char>(character[0]));
  }
  uint32_t code = static_cast<unsigned char>(character[0]);
  if (character.size() > 1) {
    code &= 0xFF >> (character.size() + 1);
    for (size_t i = 1; i < character.size(); ++i) {
      code = (code << 6) | (static_cast<unsigned char>(character[i]) & 0x3F);
    }
  }
  if (code < 0x20 || code == 0x7F) return fmt::format("U+{:04X} (a control character)", code);
  return fmt::format("'{}' (U+{:04X})", character, code);
}

std::optional<SymbolLocation> find_symbol(const Corpus& corpus, std::string_view split,
                                          const std::function<bool(std::string_view)>& unknown) {
  std::optional<SymbolLocation> found;
  if (const FileSource* files = corpus.file_source()) {
    const RecordFields& fields = files->spec().fields;
    try {
      files->for_each_record(split, [&](const TextRecord& record) {
        for (int part = 0; part < 2 && !found; ++part) {
          const std::string& text = part == 0 ? record.text : record.text_pair;
          found = search_text(text, record.line, unknown);
          if (found) {
            found->file = record.file;
            if (!record.text_file) found->field = part == 0 ? fields.text : fields.text_pair;
          }
        }
        if (found) throw found;  // stop the scan
      });
    } catch (const std::optional<SymbolLocation>&) {
    }
    return found;
  }
  for (const std::filesystem::path& file : corpus.split_files(split)) {
    int64_t line = 0;
    try {
      LineSplitter lines(file.string(), [&](std::string_view text) {
        ++line;
        found = search_text(text, line, unknown);
        if (found) throw found;
      });
      for_each_block(file, size_t{1} << 20, [&](std::string_view block) { lines.feed(block); });
      lines.finish();
    } catch (const std::optional<SymbolLocation>&) {
    }
    if (found) {
      found->file = file.string();
      return found;
    }
  }
  return std::nullopt;
}

}  // namespace rota::data
