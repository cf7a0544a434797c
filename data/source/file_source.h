// A corpus made of the user's own files: per split a file, directory or glob; text, JSONL,
// CSV or TSV; streamed, checked, with a validation split held out of train when none is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/source/document_pieces.h"
#include "data/source/file_format.h"
#include "data/source/text_record.h"

namespace rota::data {

/// What the recipe's data.files says.
struct FileSourceSpec {
  std::string train;  // a file, a directory or a glob pattern (see expand_split_paths)
  std::string valid;  // empty: held out of train
  std::string test;   // empty: no test split
  FileFormat format = FileFormat::kAuto;
  RecordFields fields;  // label empty: records are not labelled (language models)
  double valid_fraction = 0.05;
};

/// Every record of one file read as `format` (not kAuto), with the same checks and record rules
/// as a FileSource split (TEXT: every line is a record, blank lines included).
void for_each_file_record(const std::filesystem::path& file, FileFormat format,
                          const RecordFields& fields,
                          const std::function<void(const TextRecord& record)>& visit);

/// The splits of a FileSourceSpec. Every file is read in blocks (memory does not grow with file
/// size), with a UTF-8 BOM at a file's start dropped and every byte checked (TextCheck: NUL
/// bytes and malformed UTF-8 are errors naming file:line:column).
///
/// Records: a line of a TEXT file (text without its line break), a non-blank line of a JSONL
/// file, a row after the header of a CSV/TSV file. Without `valid`, the validation split is the
/// last max(1, floor(n × valid_fraction)) of the n training records and train keeps the rest.
///
/// The language-model text of a split: TEXT files as they are, each ending with a line break
/// (added when missing); JSONL/CSV/TSV records as their text field followed by "\n".
class FileSource {
 public:
  /// Expands every split's paths and resolves each file's format (missing files, patterns
  /// matching nothing, unknown extensions and structured files given as TEXT are errors now).
  explicit FileSource(FileSourceSpec spec);

  const FileSourceSpec& spec() const { return spec_; }
  /// train, valid, and test when given.
  std::vector<std::string> splits() const;
  bool has_split(std::string_view split) const;
  /// The files a split is read from (for a held-out valid: the training files).
  const std::vector<std::filesystem::path>& files(std::string_view split) const;
  /// Whether a split's files include TEXT files (whose records have no fields).
  bool has_text_files(std::string_view split) const;
  /// A short description for messages: "train: a.jsonl, b.jsonl (JSONL)".
  std::string describe(std::string_view split) const;

  /// Every record of a split, in order.
  void for_each_record(std::string_view split,
                       const std::function<void(const TextRecord& record)>& visit) const;
  /// The split's language-model text in pieces of whole lines (TEXT) or whole records
  /// (JSONL/CSV/TSV) of at most max_piece_bytes (a longer unit forms a piece alone).
  void for_each_text_piece(std::string_view split, size_t max_piece_bytes,
                           const std::function<void(std::string_view piece)>& visit) const;
  /// for_each_text_piece with the documents of `boundary` marked (Corpus::
  /// for_each_document_piece): records are the split's records, files its files (for a
  /// held-out valid split, the part of each training file it holds).
  void for_each_document_piece(
      std::string_view split, size_t max_piece_bytes, DocumentBoundary boundary,
      const std::function<void(std::string_view piece, bool ends_document)>& visit) const;
  /// Reads every split once: all checks above, plus an error for a split without records.
  /// Returns the number of records per split, in splits() order.
  std::vector<int64_t> check_all() const;

 private:
  struct Split {
    std::string name;
    std::vector<std::filesystem::path> files;
    std::vector<FileFormat> formats;
  };
  const Split& split(std::string_view name) const;
  // The split's records with the text each adds to the LM stream.
  void for_each_unit(
      std::string_view split,
      const std::function<void(const TextRecord&, std::string_view stream)>& visit) const;
  void scan_files(
      const Split& split,
      const std::function<void(const TextRecord&, std::string_view stream)>& visit) const;
  int64_t training_records() const;

  FileSourceSpec spec_;
  std::vector<Split> splits_;  // train, test (when given), valid (when given)
  mutable std::optional<int64_t> train_records_;
};

}  // namespace rota::data
