// File formats by extension, and the refusal to read structured files as running text.
#include "data/source/file_format.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "framework/base/error.h"

namespace rota::data {

namespace {

std::string lower_extension(const std::filesystem::path& file) {
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

}  // namespace

std::string_view file_format_name(FileFormat format) {
  switch (format) {
    case FileFormat::kAuto:
      return "AUTO";
    case FileFormat::kText:
      return "TEXT";
    case FileFormat::kJsonl:
      return "JSONL";
    case FileFormat::kCsv:
      return "CSV";
    case FileFormat::kTsv:
      return "TSV";
  }
  return "?";
}

std::optional<FileFormat> format_from_extension(const std::filesystem::path& file) {
  const std::string extension = lower_extension(file);
  if (extension == ".txt" || extension == ".text") return FileFormat::kText;
  if (extension == ".jsonl" || extension == ".ndjson") return FileFormat::kJsonl;
  if (extension == ".csv") return FileFormat::kCsv;
  if (extension == ".tsv") return FileFormat::kTsv;
  return std::nullopt;
}

bool extension_fits(const std::filesystem::path& file, FileFormat format) {
  const std::optional<FileFormat> known = format_from_extension(file);
  return known.has_value() && (format == FileFormat::kAuto || *known == format);
}

void refuse_structured_as_text(const std::filesystem::path& file, std::string_view source) {
  const std::string extension = lower_extension(file);
  if (extension == ".jsonl" || extension == ".ndjson" || extension == ".json") {
    fail(
        "data: {} is JSON, but {} reads running text: training would learn the JSON syntax. Use "
        "`data {{ files {{ train: \"{}\" format: JSONL text_field: \"text\" }} }}` (the key "
        "holding "
        "the text), or rename the file if it really is plain text",
        file.string(), source, file.string());
  }
  if (extension == ".csv" || extension == ".tsv") {
    fail(
        "data: {} is {} data, but {} reads running text: training would learn the delimiters and "
        "quotes. Use `data {{ files {{ train: \"{}\" format: {} text_field: \"<column>\" }} }}`, "
        "or "
        "rename the file if it really is plain text",
        file.string(), extension == ".csv" ? "CSV" : "TSV", source, file.string(),
        extension == ".csv" ? "CSV" : "TSV");
  }
}

FileFormat resolve_file_format(const std::filesystem::path& file, FileFormat requested) {
  if (requested == FileFormat::kText) {
    refuse_structured_as_text(file, "files.format TEXT");
    return requested;
  }
  if (requested != FileFormat::kAuto) return requested;
  const std::optional<FileFormat> known = format_from_extension(file);
  ROTA_CHECK(known.has_value(),
             "data: cannot tell the format of {} from its extension '{}' (known: .txt .text "
             "TEXT, .jsonl .ndjson JSONL, .csv CSV, .tsv TSV); set data.files.format",
             file.string(), file.extension().string());
  return *known;
}

}  // namespace rota::data
