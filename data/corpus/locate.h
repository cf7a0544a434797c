// Finding registered corpus files on the search path, verifying them, fetching missing ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "data/corpus/corpus_registry.h"
#include "data/corpus/data_options.h"

namespace rota::data {

/// The path of a registered corpus file: the first search-path directory holding
/// <dir>/<corpus>/<file> wins, and that copy must match the registered sha256 (a mismatch is
/// an error, not a reason to look further). When no directory has it and downloads are
/// allowed, it is downloaded (verified) into <cache_dir>/<corpus>/<file>. Otherwise throws
/// rota::Error listing every path looked at, why the download did not happen, and the
/// command that fetches the corpus (`rota data fetch NAME`).
std::filesystem::path locate_corpus_file(const CorpusInfo& corpus, const CorpusFile& file,
                                         const DataOptions& options);

/// Makes every file of a registered corpus available (downloading what is missing, whatever
/// options.allow_download says) and returns their paths: `rota data fetch NAME`.
std::vector<std::filesystem::path> fetch_corpus(std::string_view name, const DataOptions& options);

/// Where a registered file is right now, without verifying or downloading it.
struct CorpusFileStatus {
  std::string split;
  std::string file_name;
  int64_t bytes = 0;   // the registered size
  std::string sha256;  // the registered checksum, lowercase hex
  /// Empty when no search-path directory has the file.
  std::filesystem::path path;
};

/// The status of every file of a corpus: `rota data list`.
std::vector<CorpusFileStatus> corpus_status(const CorpusInfo& corpus, const DataOptions& options);

}  // namespace rota::data
