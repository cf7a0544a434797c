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
/// and version, that every shard exists with the size the manifest says, and that the saved
/// tokenizer's files hash to the manifest's tokenizer sha256. Shard contents are hashed only by
/// verify_prepared (and at prepare time).
class PreparedCorpus {
 public:
  static PreparedCorpus open(const std::filesystem::path& dir);

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
/// open() and the sha256 of every shard against the manifest; throws naming the first
/// mismatching file.
VerifyResult verify_prepared(const std::filesystem::path& dir);

}  // namespace rota::data
