// libcurl download into a temporary file, hashed while it is written.
#include "data/corpus/download.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "data/util/sha256.h"
#include "framework/base/error.h"

namespace rota::data {

namespace {

struct Sink {
  FILE* file = nullptr;
  Sha256 hash;
  bool write_failed = false;
};

size_t write_block(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t bytes = size * count;
  if (std::fwrite(data, 1, bytes, sink->file) != bytes) {
    sink->write_failed = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  sink->hash.update(data, bytes);
  return bytes;
}

void ensure_curl_initialised() {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  ROTA_CHECK(init == CURLE_OK, "download: curl_global_init failed: {}", curl_easy_strerror(init));
}

}  // namespace

void download_verified(const std::string& url, const std::string& expected_sha256,
                       const std::filesystem::path& dest, std::string_view prefix) {
  ensure_curl_initialised();
  if (dest.has_parent_path()) std::filesystem::create_directories(dest.parent_path());
  const std::filesystem::path temp = dest.string() + ".part." + std::to_string(::getpid());
  // Removes the temporary file on every failure path.
  struct TempGuard {
    std::filesystem::path path;
    bool keep = false;
    ~TempGuard() {
      if (!keep) std::remove(path.c_str());
    }
  } guard{temp};

  Sink sink;
  sink.file = std::fopen(temp.c_str(), "wb");
  ROTA_CHECK(sink.file != nullptr, "download: cannot create {}: {}", temp.string(),
             std::strerror(errno));
  std::unique_ptr<FILE, int (*)(FILE*)> file_closer(sink.file, &std::fclose);
  if (!prefix.empty()) {
    ROTA_CHECK(std::fwrite(prefix.data(), 1, prefix.size(), sink.file) == prefix.size(),
               "download: write error on {}", temp.string());
    sink.hash.update(prefix);
  }

  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), &curl_easy_cleanup);
  ROTA_CHECK(curl != nullptr, "download: curl_easy_init failed");
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &write_block);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);  // HTTP >= 400 is an error
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, 30L);
  // Give up on a stalled transfer (< 1 KB/s for 60 s) instead of hanging forever.
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "rota-data-fetch");
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  const CURLcode result = curl_easy_perform(curl.get());
  ROTA_CHECK(!sink.write_failed, "download: write error on {}", temp.string());
  ROTA_CHECK(result == CURLE_OK, "download: {} failed: {}", url,
             error_buffer[0] ? error_buffer : curl_easy_strerror(result));

  const std::string got = sink.hash.hex_digest();
  ROTA_CHECK(got == expected_sha256,
             "download: checksum mismatch for {}: expected sha256 {}, got {} (file not saved)", url,
             expected_sha256, got);
  ROTA_CHECK(std::fflush(sink.file) == 0 && ::fsync(::fileno(sink.file)) == 0,
             "download: cannot flush {}: {}", temp.string(), std::strerror(errno));
  file_closer.reset();
  ROTA_CHECK(std::rename(temp.c_str(), dest.c_str()) == 0, "download: cannot rename {} to {}: {}",
             temp.string(), dest.string(), std::strerror(errno));
  guard.keep = true;
}

}  // namespace rota::data
