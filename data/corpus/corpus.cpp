// Opening corpora: registered names and local directories or files.
#include "data/corpus/corpus.h"

#include <algorithm>

#include "data/corpus/locate.h"
#include "data/corpus/text_split.h"
#include "data/source/file_format.h"
#include "data/source/line_stream.h"
#include "data/source/path_patterns.h"
#include "data/util/utf8.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace rota::data {

namespace {

bool is_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

// The first of the candidate names present in dir, or an empty path.
std::filesystem::path first_present(const std::filesystem::path& dir,
                                    std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (is_file(dir / name)) return dir / name;
  }
  return {};
}

}  // namespace

Corpus Corpus::open(std::string_view name_or_path, const DataOptions& options) {
  Corpus corpus;
  corpus.options_ = options;
  if (const CorpusInfo* info = find_corpus(name_or_path)) {
    corpus.info_ = *info;
    corpus.name_ = info->name;
    corpus.format_ = info->format;
    if (!info->text_columns.empty()) corpus.text_columns_ = info->text_columns;
    if (!info->label_column.empty()) corpus.label_column_ = info->label_column;
    for (size_t i = 0; i < info->files.size(); ++i) {
      const CorpusFile& file = info->files[i];
      if (file.split == "all") {
        const int bounds[4] = {0, info->split_percent[0], info->split_percent[1], 100};
        const char* names[3] = {"train", "valid", "test"};
        for (int s = 0; s < 3; ++s) {
          SplitSource source;
          source.split = names[s];
          source.registered_file = static_cast<int>(i);
          source.percent_begin = bounds[s];
          source.percent_end = bounds[s + 1];
          corpus.sources_.push_back(std::move(source));
        }
      } else {
        SplitSource source;
        source.split = file.split;
        source.registered_file = static_cast<int>(i);
        source.labeled = file.labeled;
        source.columns = file.columns;
        corpus.sources_.push_back(std::move(source));
      }
    }
    return corpus;
  }

  const std::filesystem::path path(name_or_path);
  std::error_code error;
  ROTA_CHECK(std::filesystem::exists(path, error),
             "data: '{}' is neither a registered corpus ({}) nor an existing file or directory",
             name_or_path, registered_corpus_names());
  corpus.name_ = path.string();
  const auto add_cut = [&](std::vector<std::filesystem::path> files) {
    const int bounds[4] = {0, 90, 95, 100};
    const char* names[3] = {"train", "valid", "test"};
    for (int s = 0; s < 3; ++s) {
      SplitSource source;
      source.split = names[s];
      source.local_files = files;
      source.percent_begin = bounds[s];
      source.percent_end = bounds[s + 1];
      corpus.sources_.push_back(std::move(source));
    }
  };
  const auto add_split = [&](const char* split, const std::filesystem::path& file) {
    if (file.empty()) return;
    SplitSource source;
    source.split = split;
    source.local_files = {file};
    corpus.sources_.push_back(std::move(source));
  };

  if (std::filesystem::is_directory(path, error)) {
    if (is_file(path / "train.tsv")) {
      corpus.format_ = CorpusFormat::kTsv;
      add_split("train", path / "train.tsv");
      add_split("valid", first_present(path, {"dev.tsv", "valid.tsv"}));
      add_split("test", first_present(path, {"test.tsv"}));
    } else if (is_file(path / "train.txt")) {
      add_split("train", path / "train.txt");
      add_split("valid", first_present(path, {"valid.txt", "validation.txt", "dev.txt"}));
      add_split("test", first_present(path, {"test.txt"}));
    } else {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
        if (entry.path().extension() == ".txt" &&
            is_readable_regular_file(entry.path(), "a text corpus directory"))
          files.push_back(entry.path());
      }
      ROTA_CHECK(!error, "data: cannot list the directory {}: {}", path.string(), error.message());
      if (files.empty()) {
        for (const char* name : {"train.jsonl", "train.ndjson", "train.json", "train.csv"}) {
          if (is_file(path / name))
            refuse_structured_as_text(path / name, "a text corpus directory");
        }
      }
      ROTA_CHECK(!files.empty(),
                 "data: directory {} has no train.txt, train.tsv or *.txt files (for JSON Lines, "
                 "CSV or other files use data.files)",
                 path.string());
      std::sort(files.begin(), files.end());
      add_cut(std::move(files));
    }
  } else if (path.extension() == ".tsv") {
    corpus.format_ = CorpusFormat::kTsv;
    add_split("train", path);
  } else {
    refuse_structured_as_text(path, "a text corpus path");
    add_cut({path});
  }
  return corpus;
}

std::vector<std::string> Corpus::splits() const {
  if (file_source_) return file_source_->splits();
  std::vector<std::string> names;
  for (const SplitSource& source : sources_) names.push_back(source.split);
  return names;
}

bool Corpus::has_split(std::string_view split) const {
  if (file_source_) return file_source_->has_split(split);
  return std::any_of(sources_.begin(), sources_.end(),
                     [&](const SplitSource& source) { return source.split == split; });
}

const Corpus::SplitSource& Corpus::source(std::string_view split) const {
  for (const SplitSource& source : sources_) {
    if (source.split == split) return source;
  }
  std::string names;
  for (const SplitSource& source : sources_) names += (names.empty() ? "" : ", ") + source.split;
  fail("data: corpus {} has no split '{}' (splits: {})", name_, split, names);
}

std::string Corpus::read_bytes(const SplitSource& source) const {
  if (source.registered_file >= 0) {
    const CorpusFile& file = info_.files[source.registered_file];
    return read_file(locate_corpus_file(info_, file, options_));
  }
  std::string bytes;
  for (const std::filesystem::path& file : source.local_files) {
    if (!bytes.empty() && bytes.back() != '\n') bytes.push_back('\n');
    bytes += read_file(file);
  }
  return bytes;
}

std::string Corpus::read_text(std::string_view split) const {
  ROTA_CHECK(format_ == CorpusFormat::kText, "data: corpus {} is a TSV corpus; use tsv_split('{}')",
             name_, split);
  if (file_source_) {
    std::string text;
    file_source_->for_each_text_piece(split, size_t{1} << 24,
                                      [&](std::string_view piece) { text += piece; });
    return text;
  }
  const SplitSource& from = source(split);
  const std::string bytes = read_bytes(from);
  if (from.percent_begin == 0 && from.percent_end == 100) return bytes;
  return std::string(cut_by_characters(bytes, from.percent_begin, from.percent_end));
}

void Corpus::for_each_text_piece(std::string_view split, size_t max_piece_bytes,
                                 const std::function<void(std::string_view piece)>& visit) const {
  for_each_document_piece(split, max_piece_bytes, DocumentBoundary::kNone,
                          [&](std::string_view piece, bool) { visit(piece); });
}

void Corpus::for_each_document_piece(
    std::string_view split, size_t max_piece_bytes, DocumentBoundary boundary,
    const std::function<void(std::string_view piece, bool ends_document)>& visit) const {
  ROTA_CHECK(max_piece_bytes > 0, "data: for_each_text_piece needs max_piece_bytes > 0");
  ROTA_CHECK(format_ == CorpusFormat::kText, "data: corpus {} is a TSV corpus; use tsv_split('{}')",
             name_, split);
  if (file_source_) {
    return file_source_->for_each_document_piece(split, max_piece_bytes, boundary, visit);
  }
  const SplitSource& from = source(split);
  const std::vector<std::filesystem::path> files = split_files(split);
  // The lines of the files joined as read_bytes joins them ('\n' added after a file but the
  // last when the text so far does not end with one), and after each file's last line, its end.
  const auto for_each_line = [&](const LineSplitter::Emit& emit,
                                 const std::function<void()>& file_end) {
    LineSplitter lines(name_, emit);
    for (size_t i = 0; i < files.size(); ++i) {
      for_each_block(files[i], size_t{1} << 20, [&](std::string_view block) { lines.feed(block); });
      if (i + 1 < files.size()) {
        if (!lines.at_line_start()) lines.feed("\n");
      } else {
        lines.finish();
      }
      file_end();
    }
  };
  DocumentPieceBuilder pieces(boundary, max_piece_bytes, visit);
  if (from.percent_begin == 0 && from.percent_end == 100) {
    for_each_line(
        [&](std::string_view line) {
          pieces.add(line);
          pieces.end_record();
        },
        [&] { pieces.end_file(); });
  } else {
    // A UTF-8 unit never spans a '\n', so counting line by line counts the joined text.
    int64_t total = 0;
    for_each_line([&](std::string_view line) { total += utf8_unit_count(line); }, [] {});
    const int64_t begin = total * from.percent_begin / 100;
    const int64_t end = total * from.percent_end / 100;
    int64_t at = 0;  // units before this line
    for_each_line(
        [&](std::string_view line) {
          const int64_t count = utf8_unit_count(line);
          const int64_t lo = std::max(at, begin);
          const int64_t hi = std::min(at + count, end);
          if (lo < hi) {
            const size_t a = utf8_unit_offset(line, lo - at);
            const size_t b = utf8_unit_offset(line, hi - at);
            pieces.add(line.substr(a, b - a));
            pieces.end_record();
          }
          at += count;
        },
        [&] { pieces.end_file(); });
  }
  pieces.finish();
}

std::vector<std::filesystem::path> Corpus::split_files(std::string_view split) const {
  if (file_source_) return file_source_->files(split);
  const SplitSource& from = source(split);
  if (from.registered_file >= 0) {
    return {locate_corpus_file(info_, info_.files[from.registered_file], options_)};
  }
  return from.local_files;
}

Corpus Corpus::open_files(FileSourceSpec spec) {
  Corpus corpus;
  corpus.name_ = spec.train;
  corpus.file_source_ = std::make_shared<const FileSource>(std::move(spec));
  return corpus;
}

TsvSplit Corpus::tsv_split(std::string_view split) const {
  ROTA_CHECK(!file_source_, "data: {} is read from data.files; use file_source() for its records",
             name_);
  ROTA_CHECK(format_ == CorpusFormat::kTsv, "data: corpus {} is a text corpus; use read_text('{}')",
             name_, split);
  const SplitSource& from = source(split);
  TsvSplit result;
  result.labeled = from.labeled;
  result.columns = from.columns;
  result.path = from.registered_file >= 0
                    ? locate_corpus_file(info_, info_.files[from.registered_file], options_)
                    : from.local_files.front();
  return result;
}

}  // namespace rota::data
