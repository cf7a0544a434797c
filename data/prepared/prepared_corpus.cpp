// Opening, mapping and verifying a prepared corpus directory.
#include "data/prepared/prepared_corpus.h"

#include "data/prepared/tokenizer_digest.h"
#include "data/util/sha256.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/base/mapped_file.h"

namespace fs = std::filesystem;

namespace rota::data {

PreparedCorpus PreparedCorpus::open(const fs::path& dir) {
  const fs::path manifest_path = dir / kManifestFile;
  ROTA_CHECK(fs::is_directory(dir), "data: prepared corpus {} is not a directory", dir.string());
  ROTA_CHECK(fs::exists(manifest_path),
             "data: {} has no {} (not a prepared corpus, or an interrupted `rota data prepare`; "
             "prepare it again)",
             dir.string(), kManifestFile);
  PreparedCorpus corpus;
  corpus.dir_ = dir;
  corpus.manifest_ = manifest_from_json(read_file(manifest_path), manifest_path);
  for (const SplitInfo& split : corpus.manifest_.splits) {
    for (const ShardInfo& shard : split.shards) {
      const fs::path file = dir / shard.file;
      std::error_code error;
      const auto size = fs::file_size(file, error);
      ROTA_CHECK(!error,
                 "data: shard {} of split '{}' is missing ({}); the prepared corpus {} is "
                 "incomplete, prepare it again",
                 file.string(), split.name, error.message(), dir.string());
      ROTA_CHECK(static_cast<int64_t>(size) == shard.bytes,
                 "data: shard {} has {} bytes, the manifest says {}; the prepared corpus {} is "
                 "damaged, prepare it again",
                 file.string(), size, shard.bytes, dir.string());
    }
  }
  const fs::path tokenizer_dir = dir / kPreparedTokenizerDir;
  const std::string digest = tokenizer_dir_digest(tokenizer_dir);
  ROTA_CHECK(digest == corpus.manifest_.tokenizer_sha256,
             "data: the tokenizer files in {} hash to {}, the manifest says {}; the prepared "
             "corpus is damaged, prepare it again",
             tokenizer_dir.string(), digest, corpus.manifest_.tokenizer_sha256);
  return corpus;
}

bool PreparedCorpus::has_split(const std::string& split) const {
  return manifest_.find_split(split) != nullptr;
}

std::vector<std::string> PreparedCorpus::splits() const {
  std::vector<std::string> names;
  for (const SplitInfo& split : manifest_.splits) names.push_back(split.name);
  return names;
}

TokenStream PreparedCorpus::split_stream(const std::string& split) const {
  const SplitInfo* info = manifest_.find_split(split);
  ROTA_CHECK(info != nullptr, "data: the prepared corpus {} has no split '{}'", dir_.string(),
             split);
  auto files = std::make_shared<std::vector<std::unique_ptr<MappedFile>>>();
  std::vector<TokenSequence::Segment> segments;
  for (const ShardInfo& shard : info->shards) {
    auto file = std::make_unique<MappedFile>(dir_ / shard.file);
    ROTA_CHECK(static_cast<int64_t>(file->size()) == shard.bytes,
               "data: shard {} has {} bytes, the manifest says {}", (dir_ / shard.file).string(),
               file->size(), shard.bytes);
    segments.push_back({file->data(), shard.tokens, /*mapped=*/true});
    files->push_back(std::move(file));
  }
  return std::make_shared<const TokenSequence>(manifest_.dtype, std::move(segments),
                                               std::move(files));
}

std::unique_ptr<Tokenizer> PreparedCorpus::load_tokenizer() const {
  return data::load_tokenizer(dir_ / kPreparedTokenizerDir);
}

void PreparedCorpus::check_tokenizer(const Tokenizer& tokenizer) const {
  const std::string digest = tokenizer_digest(tokenizer);
  ROTA_CHECK(digest == manifest_.tokenizer_sha256,
             "data: tokenizer mismatch: the run's {} tokenizer ({} ids, sha256 {}) is not the one "
             "the prepared corpus {} was tokenised with ({} ids, sha256 {})",
             tokenizer.kind(), tokenizer.vocab_size(), digest, dir_.string(), manifest_.vocab_size,
             manifest_.tokenizer_sha256);
}

VerifyResult verify_prepared(const fs::path& dir) {
  const PreparedCorpus corpus = PreparedCorpus::open(dir);
  VerifyResult result;
  for (const SplitInfo& split : corpus.manifest().splits) {
    for (const ShardInfo& shard : split.shards) {
      const std::string digest = sha256_file(dir / shard.file);
      ROTA_CHECK(digest == shard.sha256,
                 "data: shard {} has sha256 {}, the manifest says {}; the prepared corpus is "
                 "damaged, prepare it again",
                 (dir / shard.file).string(), digest, shard.sha256);
      ++result.shards;
      result.bytes += shard.bytes;
    }
  }
  return result;
}

}  // namespace rota::data
