// SHA-256 digests (OpenSSL EVP) of byte strings and files, as lowercase hex.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace rota::data {

/// Incremental SHA-256. update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* bytes, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  /// The 64-character lowercase hex digest; the object cannot be updated afterwards.
  std::string hex_digest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
  bool finished_ = false;
};

/// SHA-256 of a byte string, lowercase hex.
std::string sha256_hex(std::string_view bytes);
/// SHA-256 of a file's contents, lowercase hex (read in 1 MiB blocks).
std::string sha256_file(const std::filesystem::path& path);

}  // namespace rota::data
