// The corpus registry: known dataset names -> files, splits, canonical URLs and sha256.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data {

enum class CorpusFormat {
  kText,  // plain UTF-8 text, one file per split (or one file cut into splits by characters)
  kTsv,   // tab-separated rows (GLUE style), one file per split
};

/// One file of a registered corpus.
struct CorpusFile {
  /// The split it holds: "train", "valid", "test" (or "test_unlabeled"); "all" for a single
  /// file that is cut into train/valid/test by characters (CorpusInfo::split_percent).
  std::string split;
  /// File name inside the corpus directory (<search dir>/<corpus name>/<file name>).
  std::string file_name;
  /// Canonical download URL (a pinned commit, so the bytes cannot change).
  std::string url;
  /// Bytes prepended to the download before the checksum (for files assembled from a source
  /// that lacks their header line); usually empty.
  std::string download_prefix;
  /// sha256 of the final file, lowercase hex.
  std::string sha256;
  int64_t bytes = 0;
  /// TSV: whether the file has a label column.
  bool labeled = true;
  /// TSV: column names for a file without a header line (empty: the file has a header).
  std::vector<std::string> columns;
};

/// A registered corpus.
struct CorpusInfo {
  std::string name;
  std::string description;
  CorpusFormat format = CorpusFormat::kText;
  std::vector<CorpusFile> files;
  /// For a corpus with one "all" file: cumulative percent boundaries of train and valid by
  /// characters (code points), e.g. {90, 95}: train = first 90 %, valid = next 5 %, test = rest.
  int split_percent[2] = {90, 95};
  /// TSV: the default text and label columns.
  std::vector<std::string> text_columns;
  std::string label_column;
  /// The usual tokenizer level ("word", "char", ...) and metric, for `rota data list`.
  std::string note;
};

/// Every registered corpus: wikitext-2, tinyshakespeare, sst-2, cola.
const std::vector<CorpusInfo>& corpus_registry();
/// The registered corpus of that name, or nullptr.
const CorpusInfo* find_corpus(std::string_view name);
/// The names, comma-separated (for error messages).
std::string registered_corpus_names();
/// The file holding a split, or nullptr.
const CorpusFile* find_corpus_file(const CorpusInfo& corpus, std::string_view split);

}  // namespace rota::data
