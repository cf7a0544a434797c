// Opening, mapping and verifying a prepared corpus directory.
#include "data/prepared/prepared_corpus.h"

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "data/prepared/tokenizer_digest.h"
#include "data/util/sha256.h"
#include "framework/base/error.h"
#include "framework/base/file_io.h"
#include "framework/base/mapped_file.h"

namespace fs = std::filesystem;

namespace rota::data {
namespace {

// What the ids of a damaged shard are told to do.
std::string damage_advice(const fs::path& dir) {
  return fmt::format(
      "; the prepared corpus {} is damaged: `rota data verify {}` checks every "
      "shard, or prepare it again",
      dir.string(), dir.string());
}

// The manifest of `dir`, read and checked (format, version).
PreparedManifest read_manifest(const fs::path& dir) {
  const fs::path manifest_path = dir / kManifestFile;
  ROTA_CHECK(fs::is_directory(dir), "data: prepared corpus {} is not a directory", dir.string());
  ROTA_CHECK(fs::exists(manifest_path),
             "data: {} has no {} (not a prepared corpus, or an interrupted `rota data prepare`; "
             "prepare it again)",
             dir.string(), kManifestFile);
  return manifest_from_json(read_file(manifest_path), manifest_path);
}

void check_tokenizer_files(const fs::path& dir, const PreparedManifest& manifest) {
  const fs::path tokenizer_dir = dir / kPreparedTokenizerDir;
  const std::string digest = tokenizer_dir_digest(tokenizer_dir);
  ROTA_CHECK(digest == manifest.tokenizer_sha256,
             "data: the tokenizer files in {} hash to {}, the manifest says {}; the prepared "
             "corpus is damaged, prepare it again",
             tokenizer_dir.string(), digest, manifest.tokenizer_sha256);
}

// Why the shard's file is not the manifest's (missing, or of another size); empty when it is.
std::string shard_file_problem(const fs::path& file, const ShardInfo& shard) {
  std::error_code error;
  const auto size = fs::file_size(file, error);
  if (error) return fmt::format("is missing ({})", error.message());
  if (static_cast<int64_t>(size) != shard.bytes) {
    return fmt::format("has {} bytes, the manifest says {}", size, shard.bytes);
  }
  return "";
}

// The first id >= vocab among `count` ids from `offset` of the mapped shard: "id X at
// position P", or empty.
std::string out_of_vocabulary(const MappedFile& file, TokenWidth width, int64_t offset,
                              int64_t count, int64_t vocab) {
  if (count <= 0) return "";
  const int64_t at = first_id_at_or_above(file.data(), width, offset, count, vocab);
  if (at < 0) return "";
  const int64_t position = offset + at;
  const int64_t id =
      width == TokenWidth::kU16
          ? static_cast<const uint16_t*>(static_cast<const void*>(file.data()))[position]
          : static_cast<const uint32_t*>(static_cast<const void*>(file.data()))[position];
  return fmt::format("holds id {} at position {}, outside the vocabulary [0, {})", id, position,
                     vocab);
}

// The sampled id bound of open(): the shard's first and last blocks and evenly spaced ones.
std::string sampled_out_of_vocabulary(const MappedFile& file, TokenWidth width, int64_t tokens,
                                      int64_t vocab) {
  const int64_t block = PreparedCorpus::kIdSampleBlock;
  if (tokens <= PreparedCorpus::kIdSampleIds) {
    return out_of_vocabulary(file, width, 0, tokens, vocab);
  }
  const int64_t blocks = PreparedCorpus::kIdSampleIds / block;  // >= 2
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t start = (tokens - block) * b / (blocks - 1);  // first 0, last tokens - block
    std::string problem = out_of_vocabulary(file, width, start, block, vocab);
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace

PreparedCorpus PreparedCorpus::open(const fs::path& dir) {
  PreparedCorpus corpus;
  corpus.dir_ = dir;
  corpus.manifest_ = read_manifest(dir);
  for (const SplitInfo& split : corpus.manifest_.splits) {
    for (const ShardInfo& shard : split.shards) {
      const fs::path file = dir / shard.file;
      const std::string problem = shard_file_problem(file, shard);
      ROTA_CHECK(problem.empty(),
                 "data: shard {} of split '{}' {}; the prepared corpus {} is {}, prepare it again",
                 file.string(), split.name, problem, dir.string(),
                 problem.rfind("is missing", 0) == 0 ? "incomplete" : "damaged");
    }
  }
  check_tokenizer_files(dir, corpus.manifest_);
  // A cheap bound on the ids: damage that made ids outside the vocabulary is usually found
  // here, before a run starts; split_stream's reads find the rest.
  for (const SplitInfo& split : corpus.manifest_.splits) {
    for (const ShardInfo& shard : split.shards) {
      const MappedFile file(dir / shard.file);
      const std::string problem = sampled_out_of_vocabulary(
          file, corpus.manifest_.dtype, shard.tokens, corpus.manifest_.vocab_size);
      ROTA_CHECK(problem.empty(), "data: shard {} of split '{}' {}{}", file.path().string(),
                 split.name, problem, damage_advice(dir));
    }
  }
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
    segments.push_back(
        {file->data(), shard.tokens, /*mapped=*/true,
         fmt::format("shard {} of split '{}'", (dir_ / shard.file).string(), split)});
    files->push_back(std::move(file));
  }
  return std::make_shared<const TokenSequence>(
      manifest_.dtype, std::move(segments), std::move(files),
      TokenIdCheck{manifest_.vocab_size, damage_advice(dir_)});
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
  const PreparedManifest manifest = read_manifest(dir);
  check_tokenizer_files(dir, manifest);
  VerifyResult result;
  std::vector<std::string> damaged;
  int64_t shards = 0;
  for (const SplitInfo& split : manifest.splits) {
    for (const ShardInfo& shard : split.shards) {
      ++shards;
      const fs::path file = dir / shard.file;
      std::string problem = shard_file_problem(file, shard);
      if (problem.empty()) {
        const std::string digest = sha256_file(file);
        if (digest != shard.sha256) {
          problem = fmt::format("sha256 {}, the manifest says {}", digest, shard.sha256);
        }
        const std::string ids = out_of_vocabulary(MappedFile(file), manifest.dtype, 0, shard.tokens,
                                                  manifest.vocab_size);
        if (!ids.empty()) problem += (problem.empty() ? "" : "; ") + ids;
      }
      if (!problem.empty()) {
        damaged.push_back(fmt::format("{} (split '{}'): {}", file.string(), split.name, problem));
        continue;
      }
      ++result.shards;
      result.bytes += shard.bytes;
    }
  }
  if (!damaged.empty()) {
    std::string list;
    for (const std::string& line : damaged) list += "\n  " + line;
    fail(
        "data: {} of the {} shards of the prepared corpus {} are damaged; prepare it again "
        "(rota data prepare RECIPE --out DIR --force):{}",
        damaged.size(), shards, dir.string(), list);
  }
  return result;
}

}  // namespace rota::data
