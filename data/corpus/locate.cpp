// Search path resolution, verification and verified fetch of registered corpus files.
#include "data/corpus/locate.h"

#include <fmt/format.h>

#include "data/corpus/checksum_cache.h"
#include "data/corpus/download.h"
#include "framework/base/error.h"

namespace rota::data {

namespace {

std::filesystem::path candidate(const SearchDir& dir, const CorpusInfo& corpus,
                                const CorpusFile& file) {
  return dir.dir / corpus.name / file.file_name;
}

bool is_file(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

void verify_or_fail(const std::filesystem::path& path, const CorpusInfo& corpus,
                    const CorpusFile& file, const DataOptions& options) {
  if (!options.verify_checksums) return;
  std::string got;
  ROTA_CHECK(verify_file_checksum(path, file.sha256, options.cache_dir, &got),
             "data: {} does not match its checksum: expected sha256 {}, got {}. Delete it and run "
             "`rota data fetch {}`, or restore the original file.",
             path.string(), file.sha256, got, corpus.name);
}

}  // namespace

std::filesystem::path locate_corpus_file(const CorpusInfo& corpus, const CorpusFile& file,
                                         const DataOptions& options) {
  for (const SearchDir& dir : options.search_path) {
    const std::filesystem::path path = candidate(dir, corpus, file);
    if (!is_file(path)) continue;
    verify_or_fail(path, corpus, file, options);
    return path;
  }

  std::string download_note;
  if (options.allow_download && !options.cache_dir.empty()) {
    const std::filesystem::path dest = options.cache_dir / corpus.name / file.file_name;
    try {
      download_verified(file.url, file.sha256, dest, file.download_prefix);
      return dest;
    } catch (const Error& e) {
      download_note = e.what();
    }
  } else {
    download_note = "downloads are disabled ($ROTA_OFFLINE is set, or allow_download is off)";
  }

  std::string looked;
  for (const SearchDir& dir : options.search_path) {
    looked +=
        fmt::format("\n  {}  ({}): not found", candidate(dir, corpus, file).string(), dir.origin);
  }
  if (looked.empty()) looked = "\n  (the search path is empty)";
  fail(
      "data: cannot find {}/{} (split '{}' of corpus {}). Looked in:{}\n{}\nTo fetch it: rota data "
      "fetch {}   (downloads {} into {}), or put the file into <dir>/{}/ for a directory <dir> "
      "listed above, or set ROTA_DATA=<dir>.",
      corpus.name, file.file_name, file.split, corpus.name, looked, download_note, corpus.name,
      file.url, (options.cache_dir / corpus.name).string(), corpus.name);
}

std::vector<std::filesystem::path> fetch_corpus(std::string_view name, const DataOptions& options) {
  const CorpusInfo* corpus = find_corpus(name);
  ROTA_CHECK(corpus != nullptr, "data: unknown corpus '{}' (registered: {})", name,
             registered_corpus_names());
  DataOptions fetching = options;
  fetching.allow_download = true;
  std::vector<std::filesystem::path> paths;
  for (const CorpusFile& file : corpus->files)
    paths.push_back(locate_corpus_file(*corpus, file, fetching));
  return paths;
}

std::vector<CorpusFileStatus> corpus_status(const CorpusInfo& corpus, const DataOptions& options) {
  std::vector<CorpusFileStatus> status;
  for (const CorpusFile& file : corpus.files) {
    CorpusFileStatus entry{file.split, file.file_name, file.bytes, file.sha256, {}};
    for (const SearchDir& dir : options.search_path) {
      if (is_file(candidate(dir, corpus, file))) {
        entry.path = candidate(dir, corpus, file);
        break;
      }
    }
    status.push_back(std::move(entry));
  }
  return status;
}

}  // namespace rota::data
