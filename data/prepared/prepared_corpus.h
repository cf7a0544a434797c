// A prepared corpus directory opened for training: manifest checks and memory-mapped splits.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset/batch.h"
#include "data/prepared/manifest.h"
#include "data/tokenizer/tokenizer.h"

namespace rota::data {

/// A directory written by prepare_corpus. open() checks what is cheap: the manifest's format
/// and version, that every shard exists with the size the manifest says, that the saved
/// tokenizer's files hash to the manifest's tokenizer sha256, and a bound on each shard's ids
/// (a sample of kIdSampleIds ids spread over the shard, all of a small one, must lie inside the
/// vocabulary). Shard contents are hashed, and every id checked, only by verify_prepared (and
/// at prepare time); split_stream's reads check every id they copy.
class PreparedCorpus {
 public:
  static PreparedCorpus open(const std::filesystem::path& dir);
  /// Ids open() checks per shard: its first and last kIdSampleBlock ids and evenly spaced
  /// blocks of that size in between.
  static constexpr int64_t kIdSampleIds = int64_t{1} << 17;
  static constexpr int64_t kIdSampleBlock = 4096;

  const std::filesystem::path& dir() const { return dir_; }
  const PreparedManifest& manifest() const { return manifest_; }
  bool has_split(const std::string& split) const;
  std::vector<std::string> splits() const;
  /// The split's ids: its shards mapped read-only (pages are read on demand) and concatenated.
  TokenStream split_stream(const std::string& split) const;
  /// The tokenizer saved in the directory.
  std::unique_ptr<Tokenizer> load_tokenizer() const;
  /// Throws unless `tokenizer` is the directory's (same saved files): training with another
  /// tokenizer than the ids were made with would silently mean something else.
  void check_tokenizer(const Tokenizer& tokenizer) const;

 private:
  std::filesystem::path dir_;
  PreparedManifest manifest_;
};

/// What verify_prepared checked.
struct VerifyResult {
  int64_t shards = 0;
  int64_t bytes = 0;
};
/// The manifest and tokenizer checks of open(), then every shard in full: present, of the
/// manifest's size and sha256, every id inside the vocabulary. Throws one error naming every
/// damaged shard and what is wrong with each.
VerifyResult verify_prepared(const std::filesystem::path& dir);

}  // namespace rota::data
