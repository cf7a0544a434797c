// Reading the user's files split by split: formats, records, the held-out validation split.
#include "data/source/file_source.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/source/delimited.h"
#include "data/source/jsonl.h"
#include "data/source/line_stream.h"
#include "data/source/path_patterns.h"
#include "data/source/text_check.h"
#include "framework/base/error.h"

namespace fs = std::filesystem;

namespace rota::data {

namespace {

constexpr size_t kBlockBytes = size_t{1} << 20;

std::string_view without_line_break(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

using UnitVisit = std::function<void(const TextRecord&, std::string_view stream)>;

// A header naming one column twice would leave which of them is read to chance: refused.
void check_unique_columns(const std::vector<std::string>& header, const std::string& file) {
  for (size_t i = 0; i < header.size(); ++i) {
    for (size_t j = i + 1; j < header.size(); ++j) {
      ROTA_CHECK(header[i] != header[j],
                 "data: {}:1: the header names column '{}' twice (columns {} and {}); rename one "
                 "so each column has its own name",
                 file, header[i], i + 1, j + 1);
    }
  }
}

// The column index of `name` in a CSV/TSV header.
size_t header_column(const std::vector<std::string>& header, const std::string& name,
                     const std::string& file) {
  const auto it = std::find(header.begin(), header.end(), name);
  ROTA_CHECK(
      it != header.end(),
      "data: {}:1: the header has no column '{}' (columns: {}); CSV/TSV files need a "
      "header row naming the columns; recipes name the ones to read in data.files.text_field, "
      "text_pair_field and label_field (rota predict: --text-field, --text-pair-field)",
      file, name, fmt::join(header, ", "));
  return static_cast<size_t>(it - header.begin());
}

void scan_file(const fs::path& path, FileFormat format, const RecordFields& fields,
               const UnitVisit& visit) {
  const std::string file = path.string();
  TextCheck check(file);
  std::function<void(std::string_view)> parse;
  std::function<void()> finish;

  std::optional<LineSplitter> lines;
  std::optional<DelimitedReader> table;
  int64_t line_number = 0;
  std::vector<std::string> header;
  size_t text_column = 0, pair_column = 0, label_column = 0;
  std::string stream;
  // A TEXT line's record, reused from line to line: no allocation per line once its text buffer
  // has grown to the longest line.
  TextRecord text_line;
  text_line.file = file;
  text_line.text_file = true;
  if (format == FileFormat::kText || format == FileFormat::kJsonl) {
    lines.emplace(file, [&](std::string_view line) {
      ++line_number;
      if (format == FileFormat::kText) {
        TextRecord& record = text_line;
        record.line = line_number;
        record.text.assign(without_line_break(line));
        if (!line.empty() && line.back() == '\n') return visit(record, line);
        stream.assign(line);
        stream.push_back('\n');
        return visit(record, stream);
      }
      std::optional<TextRecord> record =
          parse_jsonl_line(without_line_break(line), fields, file, line_number);
      if (!record) return;
      stream.assign(record->text);
      stream.push_back('\n');
      visit(*record, stream);
    });
  } else {
    table.emplace(file, format == FileFormat::kCsv ? ',' : '\t',
                  [&](std::vector<std::string>& row, int64_t line) {
                    if (header.empty()) {
                      header = row;
                      check_unique_columns(header, file);
                      text_column = header_column(header, fields.text, file);
                      if (!fields.text_pair.empty())
                        pair_column = header_column(header, fields.text_pair, file);
                      if (!fields.label.empty())
                        label_column = header_column(header, fields.label, file);
                      return;
                    }
                    ROTA_CHECK(row.size() == header.size(),
                               "data: {}:{}: {} fields, but the header has {} ({})", file, line,
                               row.size(), header.size(), fmt::join(header, ", "));
                    TextRecord record;
                    record.file = file;
                    record.line = line;
                    record.text = std::move(row[text_column]);
                    if (!fields.text_pair.empty()) record.text_pair = std::move(row[pair_column]);
                    if (!fields.label.empty()) record.label = std::move(row[label_column]);
                    stream.assign(record.text);
                    stream.push_back('\n');
                    visit(record, stream);
                  });
  }
  bool first_block = true;
  for_each_block(path, kBlockBytes, [&](std::string_view block) {
    if (first_block && block.substr(0, 3) == "\xEF\xBB\xBF") block.remove_prefix(3);  // BOM
    first_block = false;
    check.feed(block);
    if (lines) lines->feed(block);
    if (table) table->feed(block);
  });
  check.finish();
  if (lines) lines->finish();
  if (table) table->finish();
}

}  // namespace

FileSource::FileSource(FileSourceSpec spec) : spec_(std::move(spec)) {
  ROTA_CHECK(spec_.valid_fraction > 0 && spec_.valid_fraction < 1,
             "data: valid_fraction {} is not in (0, 1)", spec_.valid_fraction);
  const auto add = [&](const char* name, const std::string& paths) {
    if (paths.empty()) return;
    Split split;
    split.name = name;
    split.files = expand_split_paths(paths, spec_.format, fmt::format("data.files.{}", name));
    for (const fs::path& file : split.files) {
      split.formats.push_back(resolve_file_format(file, spec_.format));
    }
    splits_.push_back(std::move(split));
  };
  ROTA_CHECK(!spec_.train.empty(), "data: data.files.train is required");
  add("train", spec_.train);
  add("valid", spec_.valid);
  add("test", spec_.test);
}

std::vector<std::string> FileSource::splits() const {
  std::vector<std::string> names = {"train", "valid"};
  if (has_split("test")) names.emplace_back("test");
  return names;
}

bool FileSource::has_split(std::string_view name) const {
  if (name == "valid") return true;
  return std::any_of(splits_.begin(), splits_.end(),
                     [&](const Split& split) { return split.name == name; });
}

const FileSource::Split& FileSource::split(std::string_view name) const {
  if (name == "valid" && spec_.valid.empty()) name = "train";
  for (const Split& split : splits_) {
    if (split.name == name) return split;
  }
  fail("data: the data files have no split '{}' (splits: {})", name, fmt::join(splits(), ", "));
}

const std::vector<fs::path>& FileSource::files(std::string_view name) const {
  return split(name).files;
}

bool FileSource::has_text_files(std::string_view name) const {
  const Split& s = split(name);
  return std::find(s.formats.begin(), s.formats.end(), FileFormat::kText) != s.formats.end();
}

std::string FileSource::describe(std::string_view name) const {
  const Split& s = split(name);
  std::string text;
  for (size_t i = 0; i < s.files.size() && i < 3; ++i) {
    text += (i ? ", " : "") + s.files[i].string();
  }
  if (s.files.size() > 3) text += fmt::format(" and {} more", s.files.size() - 3);
  if (name == "valid" && spec_.valid.empty()) {
    return fmt::format("valid (the last {} of the training records of {})", spec_.valid_fraction,
                       text);
  }
  return fmt::format("{} ({})", name, text);
}

void for_each_file_record(const fs::path& file, FileFormat format, const RecordFields& fields,
                          const std::function<void(const TextRecord& record)>& visit) {
  ROTA_CHECK(format != FileFormat::kAuto, "for_each_file_record: resolve the format of {} first",
             file.string());
  scan_file(file, format, fields,
            [&](const TextRecord& record, std::string_view) { visit(record); });
}

void FileSource::scan_files(const Split& s, const UnitVisit& visit) const {
  for (size_t i = 0; i < s.files.size(); ++i)
    scan_file(s.files[i], s.formats[i], spec_.fields, visit);
}

int64_t FileSource::training_records() const {
  if (!train_records_) {
    int64_t n = 0;
    scan_files(split("train"), [&](const TextRecord&, std::string_view) { ++n; });
    train_records_ = n;
  }
  return *train_records_;
}

void FileSource::for_each_unit(std::string_view name, const UnitVisit& visit) const {
  const bool held_out = spec_.valid.empty() && (name == "train" || name == "valid");
  if (!held_out) return scan_files(split(name), visit);
  const int64_t n = training_records();
  const int64_t valid = std::max<int64_t>(
      1, static_cast<int64_t>(std::floor(static_cast<double>(n) * spec_.valid_fraction)));
  ROTA_CHECK(n - valid >= 1,
             "data: the training files ({}) have {} records, too few to hold out a validation "
             "split; give data.files.valid",
             describe("train"), n);
  int64_t index = 0;
  const bool want_valid = name == "valid";
  scan_files(split("train"), [&](const TextRecord& record, std::string_view stream) {
    if ((index++ >= n - valid) == want_valid) visit(record, stream);
  });
}

void FileSource::for_each_record(std::string_view name,
                                 const std::function<void(const TextRecord&)>& visit) const {
  for_each_unit(name, [&](const TextRecord& record, std::string_view) { visit(record); });
}

void FileSource::for_each_text_piece(std::string_view name, size_t max_piece_bytes,
                                     const std::function<void(std::string_view)>& visit) const {
  PieceBuilder pieces(max_piece_bytes, visit);
  for_each_unit(name, [&](const TextRecord&, std::string_view stream) { pieces.add(stream); });
  pieces.finish();
}

void FileSource::for_each_document_piece(
    std::string_view name, size_t max_piece_bytes, DocumentBoundary boundary,
    const std::function<void(std::string_view, bool)>& visit) const {
  DocumentPieceBuilder pieces(boundary, max_piece_bytes, visit);
  std::string file;  // the file of the last record
  for_each_unit(name, [&](const TextRecord& record, std::string_view stream) {
    if (record.file != file) {
      if (!file.empty()) pieces.end_file();
      file = record.file;
    }
    pieces.add(stream);
    pieces.end_record();
  });
  pieces.finish();
}

std::vector<int64_t> FileSource::check_all() const {
  std::vector<int64_t> counts;
  for (const std::string& name : splits()) {
    int64_t n = 0;
    for_each_unit(name, [&](const TextRecord&, std::string_view) { ++n; });
    ROTA_CHECK(n > 0, "data: the {} split has no records{}", describe(name),
               " (empty files, or JSONL files of blank lines only, or CSV/TSV files with only a "
               "header)");
    counts.push_back(n);
  }
  return counts;
}

}  // namespace rota::data
