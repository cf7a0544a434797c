// SHA-256 through OpenSSL's EVP digest API.
#include "data/util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

#include "framework/base/error.h"

namespace rota::data {

struct Sha256::Context {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  context_->ctx = EVP_MD_CTX_new();
  ROTA_CHECK(context_->ctx != nullptr, "sha256: EVP_MD_CTX_new failed");
  ROTA_CHECK(EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) == 1,
             "sha256: EVP_DigestInit_ex failed");
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(context_->ctx);
}

void Sha256::update(const void* bytes, size_t size) {
  ROTA_CHECK(!finished_, "sha256: update after hex_digest");
  ROTA_CHECK(EVP_DigestUpdate(context_->ctx, bytes, size) == 1, "sha256: EVP_DigestUpdate failed");
}

std::string Sha256::hex_digest() {
  ROTA_CHECK(!finished_, "sha256: hex_digest called twice");
  finished_ = true;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  ROTA_CHECK(EVP_DigestFinal_ex(context_->ctx, digest, &length) == 1,
             "sha256: EVP_DigestFinal_ex failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.hex_digest();
}

std::string sha256_file(const std::filesystem::path& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  ROTA_CHECK(file != nullptr, "sha256: cannot open {}", path.string());
  Sha256 hash;
  std::vector<char> block(1 << 20);
  size_t got;
  while ((got = std::fread(block.data(), 1, block.size(), file.get())) > 0)
    hash.update(block.data(), got);
  ROTA_CHECK(!std::ferror(file.get()), "sha256: read error on {}", path.string());
  return hash.hex_digest();
}

}  // namespace rota::data
