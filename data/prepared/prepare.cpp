// Tokenising a corpus into a prepared directory, written aside and renamed when complete.
#include "data/prepared/prepare.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "data/prepared/shard_writer.h"
#include "data/prepared/split_encoder.h"
#include "data/prepared/tokenizer_digest.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"

namespace fs = std::filesystem;

namespace rota::data {
namespace {

// Removes a directory when the scope ends, unless released.
struct RemoveOnExit {
  fs::path dir;
  ~RemoveOnExit() {
    if (dir.empty()) return;
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

bool is_empty_dir(const fs::path& path) {
  return fs::is_directory(path) && fs::directory_iterator(path) == fs::directory_iterator();
}

}  // namespace

PreparedManifest prepare_corpus(const Corpus& corpus, const Tokenizer& tokenizer,
                                const PrepareOptions& options) {
  ROTA_CHECK(corpus.format() == CorpusFormat::kText,
             "data prepare: corpus '{}' is TSV; prepared corpora hold running text for language "
             "models",
             corpus.name());
  ROTA_CHECK(!options.out.empty(), "data prepare: no output directory");
  const fs::path out = fs::absolute(options.out).lexically_normal();
  const bool exists = fs::exists(out);
  if (exists && !is_empty_dir(out)) {
    ROTA_CHECK(options.force,
               "data prepare: {} exists and is not empty; choose another --out, or --force to "
               "replace it",
               out.string());
    ROTA_CHECK(fs::is_directory(out), "data prepare: {} is a file, not a directory", out.string());
  }
  const fs::path tmp = out.parent_path() / fmt::format("{}.tmp.{}", out.filename().string(),
                                                       static_cast<long>(::getpid()));
  {
    std::error_code error;
    fs::create_directories(out.parent_path(), error);
    if (!error) fs::remove_all(tmp, error);
    if (!error) fs::create_directory(tmp, error);
    ROTA_CHECK(!error,
               "data prepare: cannot write the output directory {} (making {} failed: {}); "
               "choose an --out in a directory you can write to",
               out.string(), tmp.string(), error.message());
  }
  RemoveOnExit cleanup{tmp};

  PreparedManifest manifest;
  manifest.source = corpus.name();
  manifest.tokenizer_kind = tokenizer.kind();
  manifest.vocab_size = tokenizer.vocab_size();
  manifest.dtype = token_width_for_vocab(tokenizer.vocab_size());
  manifest.documents = options.documents;
  manifest.document_end_token =
      options.documents == DocumentBoundary::kNone ? -1 : options.document_end_token;
  tokenizer.save(tmp / kPreparedTokenizerDir);
  manifest.tokenizer_sha256 = tokenizer_dir_digest(tmp / kPreparedTokenizerDir);

  // A first pass counts the text so progress can show a total (reading is far faster than
  // tokenising).
  int64_t total = 0;
  for (const std::string& split : corpus.splits()) {
    corpus.for_each_text_piece(split, options.piece_bytes, [&](std::string_view piece) {
      total += static_cast<int64_t>(piece.size());
    });
  }
  PrepareProgress progress{"", 0, total};
  const int64_t shard_tokens =
      std::max<int64_t>(1, options.shard_bytes / token_bytes(manifest.dtype));
  for (const std::string& split : corpus.splits()) {
    SplitInfo info;
    info.name = split;
    info.source = corpus.name() + ":" + split;
    ShardWriter writer(tmp, split, manifest.dtype, shard_tokens);
    EncodeOptions encode;
    encode.piece_bytes = options.piece_bytes;
    encode.threads = options.threads;
    encode.documents = options.documents;
    encode.document_end_token = options.document_end_token;
    progress.split = split;
    encode.progress = [&](size_t bytes) {
      progress.done_bytes += static_cast<int64_t>(bytes);
      if (options.progress) options.progress(progress);
    };
    info.text_bytes =
        encode_split(corpus, split, tokenizer, encode, [&](std::span<const int64_t> ids) {
          writer.append(ids);
          info.tokens += static_cast<int64_t>(ids.size());
        });
    info.shards = writer.finish();
    manifest.splits.push_back(std::move(info));
  }
  write_file_atomically(tmp / kManifestFile, manifest_to_json(manifest));
  fsync_directory_tree(tmp / kPreparedTokenizerDir);
  fsync_directory_tree(tmp);

  // Swap into place: an old directory (force, or an empty one) is moved aside first.
  fs::path old;
  std::error_code error;
  if (exists) {
    old = out.parent_path() /
          fmt::format("{}.old.{}", out.filename().string(), static_cast<long>(::getpid()));
    fs::remove_all(old, error);
    if (!error) fs::rename(out, old, error);
  }
  if (!error) fs::rename(tmp, out, error);
  // Another `rota data prepare` (or anything else) took the place meanwhile: what is there is
  // not ours to replace, and this preparation is discarded.
  ROTA_CHECK(!error,
             "data prepare: could not move the prepared corpus into {} ({}); another process "
             "changed that directory while this one was preparing (two `rota data prepare`s "
             "into one --out?). This preparation is discarded and {} is left as the other made "
             "it: check it with `rota data verify {}`, or prepare again",
             out.string(), error.message(), out.string(), out.string());
  cleanup.dir.clear();
  fsync_directory(out.parent_path());
  if (!old.empty()) fs::remove_all(old);
  return manifest;
}

}  // namespace rota::data
