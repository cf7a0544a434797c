// A corpus opened by registered name or local path: its splits and where their bytes come from.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/corpus/corpus_registry.h"
#include "data/corpus/data_options.h"
#include "data/source/document_pieces.h"
#include "data/source/file_source.h"

namespace rota::data {

/// A TSV split: the file, whether it has labels, and column names for a headerless file.
struct TsvSplit {
  std::filesystem::path path;
  bool labeled = true;
  /// Column names when the file has no header line (empty: it has one).
  std::vector<std::string> columns;
};

/// The splits of a corpus. Registered files are located (and verified, or fetched) only when
/// a split is read, so a missing test file does not stop training.
class Corpus {
 public:
  /// A registered name (wikitext-2, tinyshakespeare, sst-2, cola), or a local path:
  ///  - a directory with train.tsv: a TSV corpus, splits train (train.tsv), valid (dev.tsv or
  ///    valid.tsv) and test (test.tsv), those present;
  ///  - a directory with train.txt: a text corpus, splits train (train.txt), valid (valid.txt,
  ///    validation.txt or dev.txt) and test (test.txt), those present;
  ///  - any other directory: its *.txt files in name order, joined (a '\n' is added after a
  ///    file that does not end with one) and cut 90/5/5 % by characters into train/valid/test;
  ///  - a .tsv file: a TSV corpus whose only split is train;
  ///  - any other file: a text cut 90/5/5 % by characters.
  /// Local files have no checksum. Throws rota::Error when the name is neither registered
  /// nor an existing path.
  static Corpus open(std::string_view name_or_path,
                     const DataOptions& options = default_data_options());
  /// The user's own files (a recipe's data.files): splits train, valid (given, or held out of
  /// train) and test (when given). Its text (read_text, for_each_text_piece) is FileSource's
  /// language-model text; classifiers read its records through file_source(). format() is kText.
  static Corpus open_files(FileSourceSpec spec);

  const std::string& name() const { return name_; }
  CorpusFormat format() const { return format_; }
  /// Split names in order (train, valid, test, ...).
  std::vector<std::string> splits() const;
  bool has_split(std::string_view split) const;
  /// The text of a split of a text corpus.
  std::string read_text(std::string_view split) const;
  /// The text of a split of a text corpus in pieces, in order: each piece ends just after a
  /// '\n' (except the last), and is at most max_piece_bytes long unless one line is longer.
  /// The pieces joined are read_text(split). Files are read in blocks, never whole (for a cut
  /// single-file corpus a first pass counts its characters); memory is bounded by
  /// max_piece_bytes and the longest line. Line-separable tokenizers (Tokenizer::encode)
  /// give the same ids piece by piece as for the whole text, which is what lets a large corpus
  /// be tokenised in parallel and without holding it whole.
  void for_each_text_piece(std::string_view split, size_t max_piece_bytes,
                           const std::function<void(std::string_view piece)>& visit) const;
  /// for_each_text_piece with the documents of `boundary` marked: a piece never holds the end
  /// of one document and the start of the next, and ends_document says that a document ends
  /// with it (DocumentPieceBuilder). Files are the corpus's files (a registered corpus has one
  /// per split; a cut corpus's documents are those of its files inside the cut), records its
  /// lines. kNone: for_each_text_piece's pieces, none ending a document.
  void for_each_document_piece(
      std::string_view split, size_t max_piece_bytes, DocumentBoundary boundary,
      const std::function<void(std::string_view piece, bool ends_document)>& visit) const;
  /// The files a split's text is read from, in order (registered files are located, and fetched
  /// when allowed); for a cut single-file corpus, the whole file.
  std::vector<std::filesystem::path> split_files(std::string_view split) const;
  /// The user's files behind open_files, or nullptr.
  const FileSource* file_source() const { return file_source_.get(); }
  /// The file of a split of a TSV corpus.
  TsvSplit tsv_split(std::string_view split) const;
  /// TSV corpora: the default text columns and label column ({"sentence"}, "label").
  const std::vector<std::string>& text_columns() const { return text_columns_; }
  const std::string& label_column() const { return label_column_; }

 private:
  struct SplitSource {
    std::string split;
    int registered_file = -1;                        // index into info_.files, or -1
    std::vector<std::filesystem::path> local_files;  // joined in order
    int percent_begin = 0;
    int percent_end = 100;
    bool labeled = true;
    std::vector<std::string> columns;
  };
  const SplitSource& source(std::string_view split) const;
  std::string read_bytes(const SplitSource& source) const;

  std::string name_;
  CorpusFormat format_ = CorpusFormat::kText;
  CorpusInfo info_;  // registered corpora only
  DataOptions options_;
  std::vector<SplitSource> sources_;
  std::vector<std::string> text_columns_ = {"sentence"};
  std::string label_column_ = "label";
  std::shared_ptr<const FileSource> file_source_;  // open_files only
};

}  // namespace rota::data
