// The formats of users' data files, and telling them apart by extension.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

namespace rota::data {

enum class FileFormat {
  kAuto,   // from the extension (format_from_extension)
  kText,   // running text
  kJsonl,  // one JSON object per line
  kCsv,    // comma-separated, RFC 4180 quoting, header row
  kTsv,    // tab-separated, RFC 4180 quoting, header row
};

/// "AUTO", "TEXT", "JSONL", "CSV", "TSV" (the recipe's names).
std::string_view file_format_name(FileFormat format);

/// .txt/.text → TEXT, .jsonl/.ndjson → JSONL, .csv → CSV, .tsv → TSV (case-insensitive);
/// nullopt for any other extension.
std::optional<FileFormat> format_from_extension(const std::filesystem::path& file);

/// Whether a file of the given format may have this extension (kAuto: any known extension).
bool extension_fits(const std::filesystem::path& file, FileFormat format);

/// The format a file is read in: `requested`, or for kAuto its extension's format (an unknown
/// extension is an error naming the file and asking for `format`). A file with a structured
/// extension (.jsonl .ndjson .json .csv .tsv) read as TEXT is refused (see
/// refuse_structured_as_text).
FileFormat resolve_file_format(const std::filesystem::path& file, FileFormat requested);

/// Throws when `file` has a structured-data extension (.jsonl .ndjson .json .csv .tsv): taking
/// it as running text would train on its syntax. `source` names the recipe field for the hint.
void refuse_structured_as_text(const std::filesystem::path& file, std::string_view source);

}  // namespace rota::data
