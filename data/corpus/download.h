// Verified downloads with libcurl: temporary file, sha256 check, atomic rename.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace rota::data {

/// Downloads url (http, https or file://) to dest. The bytes (after `prefix`, which is written
/// first) go to a temporary file next to dest; only when their sha256 equals expected_sha256
/// is it fsynced and renamed to dest, so dest is either absent or complete and correct.
/// Throws rota::Error naming the URL with curl's message, or, on a checksum mismatch,
/// "expected sha256 X, got Y" (the temporary file is removed).
void download_verified(const std::string& url, const std::string& expected_sha256,
                       const std::filesystem::path& dest, std::string_view prefix = {});

}  // namespace rota::data
