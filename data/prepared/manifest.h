// manifest.json of a prepared corpus: tokenizer identity, id width, and every split's shards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset/token_sequence.h"
#include "data/source/document_pieces.h"

namespace rota::data {

inline constexpr const char* kPreparedFormat = "rota.prepared";
inline constexpr int kPreparedVersion = 1;
inline constexpr const char* kManifestFile = "manifest.json";
/// The tokenizer's files (Tokenizer::save) inside a prepared directory.
inline constexpr const char* kPreparedTokenizerDir = "tokenizer";

/// One shard file: `tokens` ids of the manifest's dtype, `bytes` = tokens × width.
struct ShardInfo {
  std::string file;  // name inside the prepared directory
  int64_t tokens = 0;
  int64_t bytes = 0;
  std::string sha256;
};

/// One split: its shards in order (concatenated they are the split's ids).
struct SplitInfo {
  std::string name;        // train, valid, test
  std::string source;      // "<corpus name or path>:<split>"
  int64_t text_bytes = 0;  // bytes of text tokenised
  int64_t tokens = 0;      // sum of the shards' tokens
  std::vector<ShardInfo> shards;
};

struct PreparedManifest {
  std::string tokenizer_kind;    // Tokenizer::kind()
  std::string tokenizer_sha256;  // tokenizer_digest() of the saved tokenizer
  int64_t vocab_size = 0;
  TokenWidth dtype = TokenWidth::kU16;
  std::string source;  // the corpus name or path
  /// Documents the source marked (data.documents): after each one's ids comes
  /// document_end_token. kNone and −1 when the corpus was prepared without them (also what a
  /// manifest without the "documents" field means).
  DocumentBoundary documents = DocumentBoundary::kNone;
  int64_t document_end_token = -1;
  std::vector<SplitInfo> splits;

  /// The split of that name, or nullptr.
  const SplitInfo* find_split(const std::string& name) const;
};

/// The manifest as JSON text (format, version and the fields above).
std::string manifest_to_json(const PreparedManifest& manifest);
/// Parses manifest.json text; `path` names the file in errors (format, version, missing or
/// inconsistent fields).
PreparedManifest manifest_from_json(const std::string& text, const std::filesystem::path& path);

}  // namespace rota::data
